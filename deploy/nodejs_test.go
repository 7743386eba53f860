package deploy

import (
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/nodetest"
)

// TestNodeClientsUnderRoles runs the nats.js examples (examples/nodejs)
// against a server started from nats-server.conf: submit.mjs submits and
// follows a turn as the client user (no consumer: the client account has
// none to create), and tool.mjs serves echo as the toolworker user,
// binding the consumer the worker creates at the tool's first call. Each
// uses its user's inbox prefix.
func TestNodeClientsUnderRoles(t *testing.T) {
	nodetest.Node(t)
	const dir = "../examples/nodejs"
	nodetest.NPMCI(t, dir)
	setPasswords(t)
	srv := startServer(t, loadConfig(t, serverConf))
	wc, tc := stack(t, srv.ClientURL())
	env := func(user string) []string {
		return []string{"NATS_URL=" + srv.ClientURL(), "NATS_USER=" + user, "NATS_PASSWORD=" + password(user), "NATS_INBOX_PREFIX=" + inbox(user)}
	}
	tool := nodetest.Start(t, dir, env("toolworker"), "tool.mjs", "--bind-timeout", "60")
	tool.WaitOutput(t, "tool-echo", wait)

	submit, err := nodetest.Run(t, dir, env("client"), 2*wait, "submit.mjs",
		"--session", "node-roles", "--turn", "t1", "--tools", "echo-tool.json", "--timeout", "60", "say hello from node")
	out := submit.Stdout()
	if err != nil {
		t.Fatalf("node submit.mjs: %v\nstdout:\n%s\nstderr:\n%s\ntool.mjs:\n%s\n%s", err, out, submit.Stderr(), tool.Stdout(), tool.Stderr())
	}
	for _, want := range []string{
		`→ echo {"text":"say hello from node"}`,
		"← echo: node echo: say hello from node",
		"✓ turn.completed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("submit.mjs printed no %q:\n%s", want, out)
		}
	}
	tool.WaitOutput(t, "answered call_", wait)
	for _, c := range []*conn{wc, tc} {
		c.expectNoErrors(t)
	}
}

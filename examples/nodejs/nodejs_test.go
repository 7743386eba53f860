package nodejs_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/internal/nodetest"
	"github.com/turnstream/turnstream/internal/worker"
)

// wait bounds every blocking step so that a bug fails the test instead of
// hanging it; nothing asserts on time.
const wait = 90 * time.Second

// The permissions of the scripts' users: what their READMEs say they
// need, and nothing else. Neither may create a consumer, and each may
// subscribe only to its own inbox prefix (and the client to the live
// subjects), so a script that created a consumer or ignored its inbox
// prefix would fail.
var (
	clientPub = []string{
		"turn.submit.>",
		"$JS.API.STREAM.INFO.TURN_CHUNKS", "$JS.API.STREAM.INFO.TURN_MESSAGES", "$JS.API.STREAM.INFO.TURN_EVENTS",
		"$JS.API.DIRECT.GET.TURN_CHUNKS", "$JS.API.DIRECT.GET.TURN_MESSAGES", "$JS.API.DIRECT.GET.TURN_EVENTS",
		"$JS.API.STREAM.MSG.GET.TURN_CHUNKS", "$JS.API.STREAM.MSG.GET.TURN_MESSAGES", "$JS.API.STREAM.MSG.GET.TURN_EVENTS",
	}
	clientSub = []string{"_INBOX_client.>", "turn.live.>"}
	toolPub   = []string{
		"$JS.API.CONSUMER.INFO.TURN_TOOLS.tool-echo",
		"$JS.API.CONSUMER.MSG.NEXT.TURN_TOOLS.tool-echo",
		"$JS.ACK.TURN_TOOLS.tool-echo.>",
		"turn.result.>",
	}
	toolSub = []string{"_INBOX_tool.>"}
)

// TestNodeExamples runs the examples for real: an embedded NATS server, a
// worker with the mock provider in this process, `node tool.mjs` serving
// echo and `node submit.mjs` submitting a turn that offers echo (the mock
// model calls every tool offered, then reports the results). The follower
// must print the echo call, the JS tool's result and the answer made from
// it, and end with turn.completed; the tool must have answered the call.
func TestNodeExamples(t *testing.T) {
	nodetest.NPMCI(t, ".")
	srv := natstest.StartWithUsers(t,
		natstest.User("worker", "worker-pw", nil, nil),
		natstest.User("client", "client-pw", clientPub, clientSub),
		natstest.User("tool", "tool-pw", toolPub, toolSub))
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()

	mock := httptest.NewServer(mockllm.New(mockllm.Default(mockllm.DefaultOptions{})))
	t.Cleanup(mock.Close)
	cfg := config.Mock(mock.URL + "/v1")
	cfg.Worker.DrainTimeout = config.Duration(5 * time.Second)
	wc := srv.ConnectAs("worker", "worker-pw")
	w, err := worker.New(ctx, worker.Options{Conn: wc, Config: cfg, HTTPClient: &http.Client{},
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	if err != nil {
		t.Fatalf("worker.New() = %v", err)
	}
	runCtx, stop := context.WithCancel(context.WithoutCancel(t.Context()))
	stopped := make(chan error, 1)
	go func() { stopped <- w.Run(runCtx) }()
	// Deferred, not a Cleanup: the worker stops before its connection
	// closes.
	defer func() {
		stop()
		select {
		case err := <-stopped:
			if err != nil {
				t.Errorf("worker stopped with %v", err)
			}
		case <-time.After(wait):
			t.Error("the worker did not stop")
		}
	}()

	env := func(user string) []string {
		return []string{"NATS_URL=" + srv.URL(), "NATS_USER=" + user, "NATS_PASSWORD=" + user + "-pw", "NATS_INBOX_PREFIX=_INBOX_" + user}
	}
	tool := nodetest.Start(t, ".", env("tool"), "tool.mjs", "--bind-timeout", "60")
	// The consumer tool-echo does not exist yet: the worker creates it at
	// the tool's first call, and tool.mjs waits for it.
	tool.WaitOutput(t, "tool-echo", wait)

	submit, err := nodetest.Run(t, ".", env("client"), wait, "submit.mjs",
		"--session", "node1", "--turn", "t1", "--tools", "echo-tool.json", "--timeout", "60", "say hello from node")
	out := submit.Stdout()
	if err != nil {
		t.Fatalf("node submit.mjs: %v\nstdout:\n%s\nstderr:\n%s", err, out, submit.Stderr())
	}
	t.Logf("node submit.mjs printed:\n%s", out)
	for _, want := range []string{
		"> say hello from node",
		`→ echo {"text":"say hello from node"}`,
		"← echo: node echo: say hello from node",
		`Here is what I found: echo said "node echo: say hello from node".`,
		"✓ turn.completed: 2 steps, 1 tool calls",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("submit.mjs printed no %q:\n%s", want, out)
		}
	}
	tool.WaitOutput(t, "answered call_", wait)
	if got := strings.Count(tool.Stdout(), "answered "); got != 1 {
		t.Errorf("tool.mjs answered %d calls; want 1:\n%s", got, tool.Stdout())
	}
}

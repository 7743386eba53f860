package deploy

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// The README's NATS CLI walk-through, run as written by the client user
// (with its connection flags) against the shipped configuration: follow
// the live records, submit the turn, read the stored session log.
var cliSteps = struct{ follow, submit, read []string }{
	follow: []string{"sub", "turn.live.>"},
	submit: []string{"req", "turn.submit.s1", `{"session_id":"s1","turn_id":"t1","input":[{"role":"user","content":"Say hello."}]}`, "-H", "Nats-Msg-Id:s1/t1"},
	read:   []string{"req", "$JS.API.DIRECT.GET.TURN_MESSAGES", `{"seq":1,"next_by_subj":"turn.message.s1","batch":100}`, "--replies", "0"},
}

// natsCLI finds the NATS CLI: $TURNSTREAM_NATS_CLI, else nats on PATH.
// Without it the test is skipped, unless TURNSTREAM_REQUIRE_NATS_CLI=1
// (set by .ci/run, which installs it) makes that a failure.
func natsCLI(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TURNSTREAM_NATS_CLI"); p != "" {
		return p
	}
	p, err := exec.LookPath("nats")
	if err == nil {
		return p
	}
	if os.Getenv("TURNSTREAM_REQUIRE_NATS_CLI") == "1" {
		t.Fatal("the NATS CLI is not installed: go install github.com/nats-io/natscli/nats@v0.5.1 (as .ci/run does)")
	}
	t.Skip("the NATS CLI is not installed (go install github.com/nats-io/natscli/nats@v0.5.1); .ci/run installs it")
	return ""
}

// lockedBuffer collects a process's output while it runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestNATSCLIFollowsATurn runs the README's NATS CLI commands as the
// client user, under the shipped permissions, with no consumer.
func TestNATSCLIFollowsATurn(t *testing.T) {
	cli := natsCLI(t)
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range [][]string{cliSteps.follow, cliSteps.submit, cliSteps.read} {
		if line := "nats " + shellQuote(step); !strings.Contains(string(readme), line) {
			t.Errorf("README.md does not show the command the test runs:\n%s", line)
		}
	}

	setPasswords(t)
	srv := startServer(t, loadConfig(t, serverConf))
	stack(t, srv.ClientURL())
	conn := []string{"--server", srv.ClientURL(), "--user", "client", "--password", password("client"), "--inbox-prefix", inbox("client")}
	run := func(ctx context.Context, args []string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, cli, append(append([]string{}, conn...), args...)...)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir()) // no user contexts
		cmd.WaitDelay = 5 * time.Second
		return cmd
	}

	ctx, cancel := context.WithTimeout(t.Context(), 2*wait)
	defer cancel()
	follow := run(ctx, cliSteps.follow)
	var live lockedBuffer
	follow.Stdout, follow.Stderr = &live, &live
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		_ = follow.Wait()
	}()
	// The subscription is in place once the CLI says so.
	for !strings.Contains(live.String(), "Subscribing on") {
		if ctx.Err() != nil {
			t.Fatalf("nats sub did not start: %s", live.String())
		}
		time.Sleep(20 * time.Millisecond)
	}

	out, err := run(ctx, cliSteps.submit).CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"stream":"TURN_SUBMIT"`) {
		t.Fatalf("nats req turn.submit.s1: %v\n%s", err, out)
	}
	for !strings.Contains(live.String(), `"type":"turn.completed"`) {
		if ctx.Err() != nil {
			t.Fatalf("the live records never showed turn.completed:\n%s", live.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, want := range []string{"turn.live.chunk.s1.t1", "turn.live.message.s1", "Nats-Sequence"} {
		if !strings.Contains(live.String(), want) {
			t.Errorf("nats sub output has no %q:\n%s", want, live.String())
		}
	}

	out, err = run(ctx, cliSteps.read).CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"role":"user"`) || !strings.Contains(string(out), `"role":"assistant"`) {
		t.Errorf("nats req $JS.API.DIRECT.GET.TURN_MESSAGES: %v; want the user and assistant messages:\n%s", err, out)
	}
}

// shellQuote writes args as the README shows them: single-quoted where
// the shell would read them otherwise.
func shellQuote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, ` "{}$>*`) {
			a = "'" + a + "'"
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}

// The deploy README's fleet commands, run as the operator (with its
// connection flags): the NATS services of the workers and tool workers.
var fleetSteps = struct{ ls, info, stats, config []string }{
	ls:     []string{"micro", "ls"},
	info:   []string{"micro", "info", "turnstream-worker"},
	stats:  []string{"micro", "stats", "turnstream-tools"},
	config: []string{"req", "turn.svc.worker.config", "{}"},
}

// TestNATSCLISeesTheFleet runs deploy/README.md's `nats micro` commands
// under the shipped permissions: the operator sees the worker and the tool
// worker, their endpoints and stats, and the worker's configuration
// summary, without the provider's key; a client sees no service.
func TestNATSCLISeesTheFleet(t *testing.T) {
	cli := natsCLI(t)
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range [][]string{fleetSteps.ls, fleetSteps.info, fleetSteps.stats, fleetSteps.config} {
		if line := "nats " + shellQuote(step); !strings.Contains(string(readme), line) {
			t.Errorf("deploy/README.md does not show the command the test runs:\n%s", line)
		}
	}

	setPasswords(t)
	srv := startServer(t, loadConfig(t, serverConf))
	stack(t, srv.ClientURL())
	home := t.TempDir() // no user contexts
	run := func(user string, args []string) (string, error) {
		ctx, cancel := context.WithTimeout(t.Context(), wait)
		defer cancel()
		conn := []string{"--server", srv.ClientURL(), "--user", user, "--password", password(user), "--inbox-prefix", inbox(user)}
		cmd := exec.CommandContext(ctx, cli, append(conn, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+home)
		cmd.WaitDelay = 5 * time.Second
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	// The tool worker registers as Serve starts: wait for both.
	var out string
	for deadline := time.Now().Add(wait); ; time.Sleep(100 * time.Millisecond) {
		out, err = run("operator", fleetSteps.ls)
		if err == nil && strings.Contains(out, "turnstream-worker") && strings.Contains(out, "turnstream-tools") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("operator: nats micro ls = %v; want turnstream-worker and turnstream-tools:\n%s", err, out)
		}
	}
	for _, c := range []struct {
		step []string
		want []string
	}{
		{fleetSteps.info, []string{"turn.svc.worker.config", "instance:", "prefix: turn"}},
		{fleetSteps.stats, []string{"turnstream-tools Service Statistics", "config"}},
		{fleetSteps.config, []string{`"name":"mock"`, `"api_key":"none"`, `"concurrency":64`}},
	} {
		out, err := run("operator", c.step)
		if err != nil {
			t.Errorf("operator: nats %s: %v\n%s", strings.Join(c.step, " "), err, out)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("operator: nats %s printed no %q:\n%s", strings.Join(c.step, " "), w, out)
			}
		}
	}

	// `nats micro ls` asks $SRV.INFO: the server refuses it to a client.
	out, err = run("client", fleetSteps.ls)
	if strings.Contains(out, "turnstream-") || !strings.Contains(out, `Permissions Violation for Publish to "$SRV.INFO"`) {
		t.Errorf("client: nats micro ls = %v; want the request refused, no service listed:\n%s", err, out)
	}
}

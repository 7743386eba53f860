package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/turnstream/turnstream/internal/demotools"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/wire"
)

// child is `turnstream args...` run as a child process (this test binary,
// see TestMain), killed when the test ends.
type child struct {
	cmd            *exec.Cmd
	stdout, stderr *lockedBuffer
	done           chan error // the exit, once
}

func startChild(t *testing.T, env []string, args ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(os.Args[0], "-test.run=^$"), stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, done: make(chan error, 1)}
	c.cmd.Env = append(append(os.Environ(), env...), envMainArgs+"="+strings.Join(args, "\n"))
	c.cmd.Stdout, c.cmd.Stderr = c.stdout, c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.done <- c.cmd.Wait() }()
	t.Cleanup(func() {
		c.cmd.Process.Kill() //nolint:errcheck // it may have exited
		c.done <- <-c.done
		if t.Failed() {
			t.Logf("turnstream %s stdout:\n%s\nstderr:\n%s", args[0], c.stdout.String(), c.stderr.String())
		}
	})
	return c
}

// waitFor waits until cond holds; the bound only turns a hang into a
// failure.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(cmdWait); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

// signal sends sig to the child.
func (c *child) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// running fails the test if the child has exited: after a first signal,
// it should be draining what it runs.
func (c *child) running(t *testing.T) {
	t.Helper()
	select {
	case err := <-c.done:
		c.done <- err
		t.Fatalf("the child exited on the first signal (%v); want it draining its running turn", err)
	default:
	}
}

// exit waits for the child's exit (bounded, to fail a hang) and returns
// its exit code.
func (c *child) exit(t *testing.T, bound time.Duration) int {
	t.Helper()
	select {
	case err := <-c.done:
		c.done <- err
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatalf("waiting for the child: %v", err)
		}
		return 0
	case <-time.After(bound):
		t.Fatalf("the child did not exit within %s", bound)
		return -1
	}
}

var devURL = regexp.MustCompile(`NATS with JetStream at (nats://\S+)`)

// startDev runs `turnstream dev` on a random port with the mock provider
// streaming each chunk after latency, and a turn with the demo tools
// submitted to it, signalled at its first provider request. It returns the
// child and the channel of the turn's live events (a core NATS
// subscription, so it keeps what came before dev stopped).
func startDev(t *testing.T, latency string) (*child, chan *nats.Msg) {
	t.Helper()
	dev := startChild(t, nil, "dev", "--listen", "127.0.0.1:-1", "--latency", latency)
	var url string
	waitFor(t, "dev prints its NATS URL", func() bool {
		m := devURL.FindStringSubmatch(dev.stdout.String())
		if m != nil {
			url = m[1]
		}
		return m != nil && strings.Contains(dev.stdout.String(), "Ctrl-C stops")
	})
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	events := make(chan *nats.Msg, 4096)
	if _, err := nc.ChanSubscribe(wire.Subjects{}.LiveEvent("dev"), events); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := c.Submit(t.Context(), wire.TurnRequest{SessionID: "dev", TurnID: "at-ctrl-c", Tools: demotools.Tools(),
		Input: []wire.InputMessage{{Role: wire.RoleUser, Content: defaultPrompt}}})
	if err != nil {
		t.Fatal(err)
	}
	tr.Close() // the live subscription follows it
	next := func() wire.SessionEvent {
		t.Helper()
		select {
		case m := <-events:
			var ev wire.SessionEvent
			if err := json.Unmarshal(m.Data, &ev); err != nil {
				t.Fatalf("live event %q: %v", m.Data, err)
			}
			return ev
		case <-time.After(cmdWait):
			t.Fatal("no live event")
			return wire.SessionEvent{}
		}
	}
	for ev := next(); ev.Type != wire.EventLLMRequest; ev = next() {
	}
	return dev, events
}

// TestDevStopsOnFirstSignal: Ctrl-C on `turnstream dev` while a turn runs
// lets the turn finish, its tool calls served by the demo tools (which
// stop after the worker drained), and dev exits 0.
func TestDevStopsOnFirstSignal(t *testing.T) {
	dev, events := startDev(t, "50ms")
	dev.signal(t, syscall.SIGINT)
	if code := dev.exit(t, cmdWait); code != 0 {
		t.Errorf("dev exited %d after one Ctrl-C; want 0", code)
	}
	var types []string
	for len(events) > 0 {
		var ev wire.SessionEvent
		if err := json.Unmarshal((<-events).Data, &ev); err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.Type)
	}
	got := strings.Join(types, " ")
	if !strings.Contains(got, wire.EventToolResult) || strings.Contains(got, wire.EventToolRepaired) || !strings.HasSuffix(got, wire.EventTurnCompleted) {
		t.Errorf("the turn running at Ctrl-C had events %s; want its tools' results and turn.completed last, nothing repaired", got)
	}
	for _, want := range []string{"stopping: the worker drains", "stopped\n"} {
		if !strings.Contains(dev.stdout.String(), want) {
			t.Errorf("dev's output lacks %q", want)
		}
	}
}

// TestDevSecondSignalExitsAtOnce: a second Ctrl-C while dev drains a slow
// turn (30 s of mock provider latency) ends it at once, with the status of
// an interrupted command.
func TestDevSecondSignalExitsAtOnce(t *testing.T) {
	dev, _ := startDev(t, "2s")
	dev.signal(t, syscall.SIGINT)
	waitFor(t, "dev stops", func() bool { return strings.Contains(dev.stdout.String(), "stopping: the worker drains") })
	dev.running(t)
	dev.signal(t, syscall.SIGINT)
	// A bound, not a speed: the drain would take half a minute.
	if code := dev.exit(t, 20*time.Second); code != exitInterrupted {
		t.Errorf("dev exited %d on the second Ctrl-C; want %d", code, exitInterrupted)
	}
}

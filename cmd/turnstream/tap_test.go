package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/console"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/pkg/wire"
)

// cmdWait bounds every wait of these tests so that a bug fails a test
// instead of hanging it; nothing asserts on time.
const cmdWait = 60 * time.Second

// running is a command started by startCommand.
type running struct {
	out  *lockedBuffer
	done chan error
	stop context.CancelFunc
}

// startCommand runs `turnstream args...` in the test process until stop (as
// Ctrl-C would stop it) or its own end.
func startCommand(t *testing.T, args ...string) *running {
	t.Helper()
	ctx, stop := context.WithCancel(context.WithoutCancel(t.Context()))
	r := &running{out: &lockedBuffer{}, done: make(chan error, 1), stop: stop}
	go func() { r.done <- dispatch(ctx, args, r.out) }()
	t.Cleanup(func() {
		stop()
		select {
		case <-r.done:
		case <-time.After(cmdWait):
			t.Errorf("turnstream %s did not stop", args[0])
		}
	})
	return r
}

// wait stops the command and returns its error.
func (r *running) wait(t *testing.T) error {
	t.Helper()
	r.stop()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		return err
	case <-time.After(cmdWait):
		t.Fatal("the command did not stop")
		return nil
	}
}

// waitOutput waits until the command's output satisfies ok.
func (r *running) waitOutput(t *testing.T, what string, ok func(out string) bool) string {
	t.Helper()
	deadline := time.Now().Add(cmdWait)
	for {
		out := r.out.String()
		if ok(out) {
			return out
		}
		select {
		case err := <-r.done:
			r.done <- err
			t.Fatalf("the command ended (%v) before its output had %s:\n%s", err, what, out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command's output has no %s after %s:\n%s", what, cmdWait, out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// eventWriter writes audit events and fence markers with the bus, as
// workers do.
type eventWriter struct {
	t   *testing.T
	ctx context.Context
	b   *bus.Bus
}

func newEventWriter(t *testing.T, js jetstream.JetStream) eventWriter {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), cmdWait)
	t.Cleanup(cancel)
	if err := (bus.Topology{}).Ensure(ctx, js); err != nil {
		t.Fatalf("Ensure() = %v", err)
	}
	b, err := bus.New(ctx, js, wire.Subjects{})
	if err != nil {
		t.Fatalf("bus.New() = %v", err)
	}
	return eventWriter{t: t, ctx: ctx, b: b}
}

// tapTime is the time of every event written, so console lines are known.
var tapTime = time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)

// event is the event labelled "<session>/<step>".
func event(label string) *wire.SessionEvent {
	session, step, _ := strings.Cut(label, "/")
	var n int
	fmt.Sscan(step, &n) //nolint:errcheck // labels are the test's own
	return &wire.SessionEvent{Type: wire.EventLLMRequest, SessionID: session, TurnID: "t1", Step: n, Time: tapTime,
		Payload: map[string]any{"target": "mock/mock-1"}}
}

func (w eventWriter) emit(labels ...string) {
	w.t.Helper()
	for _, l := range labels {
		ev := event(l)
		tw := w.b.Turn(ev.SessionID, ev.TurnID, wire.JSON, nil)
		if err := tw.Event(ev); err != nil {
			w.t.Fatalf("Event(%s) = %v", l, err)
		}
		if err := tw.Flush(w.ctx); err != nil {
			w.t.Fatalf("Flush(%s) = %v", l, err)
		}
	}
}

// fence takes session's lease, writing its fence markers (one on
// turn.event.=fence.<session>), as a worker starting a turn does.
func (w eventWriter) fence(session string) {
	w.t.Helper()
	st, err := w.b.State(w.ctx)
	if err != nil {
		w.t.Fatalf("State() = %v", err)
	}
	if _, err := w.b.TakeLease(w.ctx, st, session, "t1", 1, "tap test"); err != nil {
		w.t.Fatalf("TakeLease(%s) = %v", session, err)
	}
}

// consoleLine is how tap prints an event without --json.
func consoleLine(label string) string {
	ev := event(label)
	return fmt.Sprintf("%s %-12s %s", ev.Time.Format("15:04:05.000"), ev.SessionID, console.EventLine(ev))
}

func lines(out string) []string { return strings.Split(strings.TrimSuffix(out, "\n"), "\n") }

// jsonLabels decodes tap --json output into event labels.
func jsonLabels(t *testing.T, out string) []string {
	t.Helper()
	var got []string
	for _, l := range lines(out) {
		var ev wire.SessionEvent
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("tap --json line %q: %v", l, err)
		}
		got = append(got, fmt.Sprintf("%s/%d", ev.SessionID, ev.Step))
	}
	return got
}

// TestTap runs `turnstream tap` as an auditor would: it prints the events
// of every session (or of one) stored before it started (--all) and while
// it runs, each once and in order, in both formats, and never the workers'
// lease fence markers. It holds no consumer.
func TestTap(t *testing.T) {
	srv := natstest.Start(t)
	_, js := srv.JetStream()
	w := newEventWriter(t, js)
	w.fence("s1")
	before := []string{"s1/1", "s2/1", "s3/1"}
	w.emit(before...)

	all := startCommand(t, "tap", "--nats-url", srv.URL(), "--all", "--json")
	one := startCommand(t, "tap", "--nats-url", srv.URL(), "--all", "--session", "s2")
	during := []string{"s2/2", "s1/2", "s3/2", "s2/3"}
	w.emit(during[:2]...)
	w.fence("s2")
	w.emit(during[2:]...)

	want := slices.Concat(before, during)
	out := all.waitOutput(t, "every event", func(out string) bool { return strings.Count(out, "\n") >= len(want) })
	if got := jsonLabels(t, out); !slices.Equal(got, want) {
		t.Errorf("tap --all --json printed %q; want %q", got, want)
	}
	var wantOne []string
	for _, l := range want {
		if strings.HasPrefix(l, "s2/") {
			wantOne = append(wantOne, consoleLine(l))
		}
	}
	out = one.waitOutput(t, "the session's events", func(out string) bool { return strings.Count(out, "\n") >= len(wantOne) })
	if got := lines(out); !slices.Equal(got, wantOne) {
		t.Errorf("tap --all --session s2 printed\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantOne, "\n"))
	}

	// Nothing more was printed once a last event comes: no duplicate, no
	// fence marker.
	w.emit("s2/4")
	want = append(want, "s2/4")
	wantOne = append(wantOne, consoleLine("s2/4"))
	out = all.waitOutput(t, "the last event", func(out string) bool { return strings.Contains(out, `"step":4`) })
	if got := jsonLabels(t, out); !slices.Equal(got, want) {
		t.Errorf("tap --all --json printed %q; want %q", got, want)
	}
	out = one.waitOutput(t, "the last event", func(out string) bool { return strings.Contains(out, "step=4") })
	if got := lines(out); !slices.Equal(got, wantOne) {
		t.Errorf("tap --all --session s2 printed\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantOne, "\n"))
	}
	for _, r := range []*running{all, one} {
		if err := r.wait(t); err != nil {
			t.Errorf("tap stopped with %v; want nil (stopped as by Ctrl-C)", err)
		}
	}
	s, err := js.Stream(w.ctx, wire.StreamEvents)
	if err != nil {
		t.Fatalf("Stream() = %v", err)
	}
	if n := s.CachedInfo().State.Consumers; n != 0 {
		t.Errorf("TURN_EVENTS has %d consumers; want none", n)
	}
}

// TestTapNew: without --all, tap prints only the events stored after it
// started. Since the command does not say when it has started, events are
// written until it prints one; from then on it prints every one.
func TestTapNew(t *testing.T) {
	srv := natstest.Start(t)
	_, js := srv.JetStream()
	w := newEventWriter(t, js)
	w.emit("old/1", "old/2")
	tap := startCommand(t, "tap", "--nats-url", srv.URL(), "--json")
	deadline := time.Now().Add(cmdWait)
	probes := 0
	for tap.out.String() == "" {
		if time.Now().After(deadline) {
			t.Fatalf("tap printed nothing after %d events", probes)
		}
		probes++
		w.emit(fmt.Sprintf("probe/%d", probes))
		time.Sleep(20 * time.Millisecond)
	}
	w.emit("new/1")
	out := tap.waitOutput(t, "the new event", func(out string) bool { return strings.Contains(out, `"session_id":"new"`) })
	got := jsonLabels(t, out)
	var first int
	if _, err := fmt.Sscanf(got[0], "probe/%d", &first); err != nil {
		t.Fatalf("tap printed %q first; want a probe event", got[0])
	}
	var want []string
	for i := first; i <= probes; i++ {
		want = append(want, fmt.Sprintf("probe/%d", i))
	}
	want = append(want, "new/1")
	if !slices.Equal(got, want) {
		t.Errorf("tap printed %q; want %q", got, want)
	}
}

package worker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// blocker is a tool that signals each call and answers once released.
type blocker struct {
	called  chan struct{}
	release chan struct{}
}

func newBlocker(t *testing.T) *blocker {
	b := &blocker{called: make(chan struct{}, 8), release: make(chan struct{})}
	// A test frees it before it ends too: the tool worker's drain, at
	// cleanup, would wait for a call still blocked.
	t.Cleanup(b.free)
	return b
}

func (b *blocker) handle(ctx context.Context, _ wire.ToolCall) (toolworker.Result, error) {
	b.called <- struct{}{}
	select {
	case <-b.release:
	case <-ctx.Done():
		return toolworker.Result{}, ctx.Err()
	}
	return toolworker.Result{Content: "released"}, nil
}

// wait returns once the tool was called.
func (b *blocker) wait(ctx context.Context, t *testing.T) {
	t.Helper()
	select {
	case <-b.called:
	case <-ctx.Done():
		t.Fatal("the tool was never called")
	}
}

func (b *blocker) free() {
	select {
	case <-b.release:
	default:
		close(b.release)
	}
}

// asked counts the provider requests with a message whose text is text.
func asked(e *env, text string) int {
	n := 0
	for _, r := range e.mock.Requests() {
		for _, m := range r.Messages {
			if strings.Contains(m.Text(), text) {
				n++
				break
			}
		}
	}
	return n
}

// turnEvents counts the stored events of session's turn by type.
func turnEvents(t *testing.T, e *env, session, turn string) map[string]int {
	t.Helper()
	evs, _ := records[wire.SessionEvent](t, e.js, wire.StreamEvents, wire.Subjects{}.Event(session))
	var mine []wire.SessionEvent
	for _, ev := range evs {
		if ev.TurnID == turn {
			mine = append(mine, ev)
		}
	}
	return countTypes(mine)
}

// cancelledOnce checks that a turn that never reached its provider ended
// with one turn.failed "cancelled" and nothing else terminal.
func cancelledOnce(t *testing.T, terminal wire.SessionEvent, n map[string]int) {
	t.Helper()
	if terminal.Type != wire.EventTurnFailed || terminal.Payload["reason"] != "cancelled" {
		t.Errorf("terminal = %s %v; want turn.failed cancelled", terminal.Type, terminal.Payload)
	}
	if n[wire.EventTurnFailed] != 1 || n[wire.EventTurnCompleted] != 0 {
		t.Errorf("events = %v; want exactly one terminal event, turn.failed", n)
	}
}

// awaitForgotten returns once the session's stored cancels are deleted
// (the turn that honored the last one removed it).
func awaitForgotten(ctx context.Context, t *testing.T, e *env, session string) {
	t.Helper()
	kv, err := e.js.KeyValue(ctx, bus.StateBucket)
	if err != nil {
		t.Fatal(err)
	}
	w, err := kv.Watch(ctx, bus.CancelKey(session))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop() //nolint:errcheck // the watch ends with the test
	stored := false
	for {
		select {
		case u := <-w.Updates():
			switch {
			case u == nil && !stored:
				return // never stored, or deleted and compacted
			case u == nil:
			case u.Operation() == jetstream.KeyValuePut:
				stored = true
			default:
				return
			}
		case <-ctx.Done():
			t.Fatalf("the stored cancels of %s were never removed", session)
		}
	}
}

// TestCancelQueuedTurn: a turn queued behind its session's running turn
// (still in TURN_SUBMIT when the worker has no free slot, or parked by the
// worker) and cancelled ends turn.failed "cancelled" once the running turn
// ends, with one terminal event and no provider request; its stored
// cancel is removed. The running turn is untouched.
func TestCancelQueuedTurn(t *testing.T) {
	for _, tt := range []struct {
		name        string
		concurrency int
	}{
		{"not fetched", 1},
		{"parked", 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{}))
			e.cfg.Worker.Concurrency = tt.concurrency
			block := newBlocker(t)
			e.serveTools(map[string]toolworker.Handler{"block": block.handle})
			e.startWorker()
			c := e.client()
			ctx := ctxFor(t)
			a, err := c.Submit(ctx, wire.TurnRequest{SessionID: "queued", TurnID: "a",
				Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "run a"}}, Tools: []wire.Tool{tool("block")}})
			if err != nil {
				t.Fatal(err)
			}
			block.wait(ctx, t) // a holds the session's lease
			b, err := c.Submit(ctx, wire.TurnRequest{SessionID: "queued", TurnID: "b",
				Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "run b"}}})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Cancel(ctx, "queued", "b"); err != nil {
				t.Fatalf("Cancel(queued, b) = %v; want nil", err)
			}
			block.free()

			if res, err := a.Wait(ctx); err != nil || res.Terminal.Type != wire.EventTurnCompleted {
				t.Fatalf("a: Wait() = %+v, %v; want completed", res.Terminal, err)
			}
			res, err := b.Wait(ctx)
			if err != nil {
				t.Fatal(err)
			}
			n := turnEvents(t, e, "queued", "b")
			cancelledOnce(t, res.Terminal, n)
			if n[wire.EventLLMRequest] != 0 || asked(e, "run b") != 0 {
				t.Errorf("b: %d llm/request events, %d provider requests; want none", n[wire.EventLLMRequest], asked(e, "run b"))
			}
			awaitForgotten(ctx, t, e, "queued")
		})
	}
}

// TestCancelBetweenDeliveries: a worker stops mid-turn and hands the turn
// back; while no worker runs it, it is cancelled; the worker that picks it
// up ends it turn.failed "cancelled" without asking the provider again, and
// gives the call the first delivery left open an explicit result.
func TestCancelBetweenDeliveries(t *testing.T) {
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{}))
	e.cfg.Worker.Concurrency = 1 // a busy worker fetches nothing
	e.cfg.Worker.DrainTimeout = config.Duration(100 * time.Millisecond)
	busy, slow := newBlocker(t), newBlocker(t)
	defer slow.free() // before the tool worker drains
	e.serveTools(map[string]toolworker.Handler{"block": busy.handle, "slow": slow.handle})
	c := e.client()
	ctx := ctxFor(t)

	e.startWorker() // the one that picks the turn up, busy meanwhile
	if _, err := c.Submit(ctx, wire.TurnRequest{SessionID: "busy", TurnID: "t1",
		Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "hold on"}}, Tools: []wire.Tool{tool("block")}}); err != nil {
		t.Fatal(err)
	}
	busy.wait(ctx, t)
	first := e.startWorker()
	turn, err := c.Submit(ctx, wire.TurnRequest{SessionID: "between", TurnID: "t1",
		Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "go slow"}}, Tools: []wire.Tool{tool("slow")}})
	if err != nil {
		t.Fatal(err)
	}
	slow.wait(ctx, t)
	first.stop(t) // hands the turn back, its call open

	if err := c.Cancel(ctx, "between", "t1"); err != nil {
		t.Fatalf("Cancel(between, t1) = %v; want nil", err)
	}
	busy.free() // the other worker is free to pick the turn up

	res, err := turn.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := turnEvents(t, e, "between", "t1")
	cancelledOnce(t, res.Terminal, n)
	if n[wire.EventLLMRequest] != 1 || asked(e, "go slow") != 1 {
		t.Errorf("%d llm/request events, %d provider requests; want only the first delivery's", n[wire.EventLLMRequest], asked(e, "go slow"))
	}
	log, _ := records[wire.Message](t, e.js, wire.StreamMessages, wire.Subjects{}.Message("between"))
	if last := log[len(log)-1]; last.Role != wire.RoleTool || !last.Synthesized || !last.IsError || !strings.Contains(last.Content, "cancelled") {
		t.Errorf("last message = %+v; want a synthesized cancelled result for the open call", last)
	}
	awaitForgotten(ctx, t, e, "between")
}

// TestCancelEndedTurn: a cancel of a turn that ended, or of a session with
// nothing running, is answered and changes nothing: the turn keeps its one
// terminal event, and the session's next turn runs.
func TestCancelEndedTurn(t *testing.T) {
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{}))
	e.startWorker()
	c := e.client()
	ctx := ctxFor(t)
	submit := func(turnID string) wire.SessionEvent {
		t.Helper()
		tr, err := c.Submit(ctx, wire.TurnRequest{SessionID: "ended", TurnID: turnID,
			Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "hello " + turnID}}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := tr.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return res.Terminal
	}
	if got := submit("t1"); got.Type != wire.EventTurnCompleted {
		t.Fatalf("t1 ended %s; want completed", got.Type)
	}
	for _, turnID := range []string{"t1", ""} {
		if err := c.Cancel(ctx, "ended", turnID); err != nil {
			t.Errorf("Cancel(ended, %q) = %v; want nil", turnID, err)
		}
	}
	if got := submit("t2"); got.Type != wire.EventTurnCompleted {
		t.Errorf("t2 after a cancel of t1 ended %s %v; want completed", got.Type, got.Payload)
	}
	if n := turnEvents(t, e, "ended", "t1"); n[wire.EventTurnCompleted] != 1 || n[wire.EventTurnFailed] != 0 {
		t.Errorf("t1 events = %v; want its one turn.completed", n)
	}
}

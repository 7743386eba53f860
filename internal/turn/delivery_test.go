package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/turn"
	"github.com/turnstream/turnstream/pkg/wire"
)

// The lifecycle's tests run on in-memory fakes of its durable side; the
// worker's tests run the same lifecycle on real NATS.

// memState is an in-memory StateStore.
type memState struct {
	mu   sync.Mutex
	kv   map[string][]byte
	fail error // every Put fails with it when set
}

func (s *memState) Get(_ context.Context, key string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.kv[key]
	return v, ok, nil
}

func (s *memState) Put(_ context.Context, key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.kv[key] = append([]byte(nil), value...)
	return nil
}

// memWriter records what a turn writes; after failAfter appends, every
// write fails with failWith.
type memWriter struct {
	mu        sync.Mutex
	sess      *memSessions
	chunks    []wire.Chunk
	raws      []wire.RawFrame
	events    []wire.SessionEvent
	failAfter int
	failWith  error
	appends   int
	// dispatchFails fails that many dispatches with a lost ack; each
	// dispatch that is stored is answered on answers.
	dispatchFails int
	dispatches    int
	answers       chan wire.ToolResult
}

func (w *memWriter) err() error {
	if w.failWith != nil && w.appends >= w.failAfter {
		return w.failWith
	}
	return nil
}

func (w *memWriter) Codec() wire.Codec { return wire.JSON }
func (w *memWriter) Chunk(c *wire.Chunk) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.chunks = append(w.chunks, *c)
	return nil
}
func (w *memWriter) Raw(f *wire.RawFrame) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.raws = append(w.raws, *f)
	return nil
}
func (w *memWriter) Event(ev *wire.SessionEvent) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events = append(w.events, *ev)
	return nil
}
func (w *memWriter) Flush(context.Context) error { return w.err() }
func (w *memWriter) Append(_ context.Context, m *wire.Message) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.err(); err != nil {
		return err
	}
	w.appends++
	w.sess.mu.Lock()
	defer w.sess.mu.Unlock()
	m.Seq = uint64(len(w.sess.log) + 1)
	w.sess.log = append(w.sess.log, *m)
	return nil
}
func (w *memWriter) Dispatch(_ context.Context, c *wire.ToolCall) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dispatches++
	if w.dispatchFails > 0 {
		w.dispatchFails--
		return errors.New("nats: timeout") // the ack was lost
	}
	if w.answers != nil {
		w.answers <- wire.ToolResult{SessionID: c.SessionID, TurnID: c.TurnID, CallID: c.CallID, Token: c.Token, Content: "42"}
	}
	return w.err()
}

// chanResults follows the results a memWriter answers with.
type chanResults chan wire.ToolResult

func (c chanResults) Next(ctx context.Context) (wire.ToolResult, error) {
	select {
	case r := <-c:
		return r, nil
	case <-ctx.Done():
		return wire.ToolResult{}, ctx.Err()
	}
}
func (c chanResults) Stop() {}
func (w *memWriter) Terminal(_ context.Context, ev *wire.SessionEvent) error {
	if err := w.err(); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events = append(w.events, *ev)
	w.sess.mu.Lock()
	w.sess.terminals[ev.TurnID]++
	w.sess.mu.Unlock()
	return nil
}

// memSessions is one session's durable side.
type memSessions struct {
	mu        sync.Mutex
	state     *memState
	log       []wire.Message
	requests  []uint64 // the request that appended each of log (0: none)
	head      uint64
	takes     map[string]int // deliveries per request
	released  int
	terminals map[string]int
	// writer is the writer of the next take.
	writer  *memWriter
	held    bool // what Held reports
	takeErr error
}

func newSessions() *memSessions {
	s := &memSessions{state: &memState{kv: map[string][]byte{}}, takes: map[string]int{}, terminals: map[string]int{}, held: true}
	s.writer = &memWriter{sess: s}
	return s
}

func (s *memSessions) Look(ctx context.Context, session string) (turn.Look, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.state.mu.Lock()
	defer s.state.mu.Unlock()
	return memLook{kv: maps.Clone(s.state.kv), head: s.head, session: session}, nil
}

type memLook struct {
	kv      map[string][]byte
	head    uint64
	session string
}

func (l memLook) Record(turnID string) ([]byte, bool) {
	b, ok := l.kv[turn.RecordKey(l.session, turnID)]
	return b, ok
}
func (l memLook) Head() uint64 { return l.head }

func (s *memSessions) Take(ctx context.Context, lk turn.Look, turnID string, seq uint64, _ wire.Codec, _ func() error) (turn.Held, error) {
	if s.takeErr != nil {
		return nil, s.takeErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := fmt.Sprintf("%s/%d", turnID, seq)
	s.takes[key]++
	rec, ok, _ := s.state.Get(ctx, turn.RecordKey(lk.(memLook).session, turnID))
	return &memHeld{s: s, deliveries: s.takes[key], log: append([]wire.Message(nil), s.log...), requests: append([]uint64(nil), s.requests...), rec: rec, recOK: ok}, nil
}

type memHeld struct {
	s          *memSessions
	deliveries int
	log        []wire.Message
	requests   []uint64
	rec        []byte
	recOK      bool
}

func (h *memHeld) Deliveries() int        { return h.deliveries }
func (h *memHeld) Record() ([]byte, bool) { return h.rec, h.recOK }
func (h *memHeld) Ran(turnID string, seq uint64) (inLog, byRequest bool) {
	for i, m := range h.log {
		if m.TurnID == turnID {
			inLog = true
			if i < len(h.requests) && h.requests[i] == seq {
				return true, true
			}
		}
	}
	return inLog, false
}
func (h *memHeld) Log() ([]wire.Message, []time.Time) {
	return h.log, make([]time.Time, len(h.log))
}
func (h *memHeld) Tail() turn.Tail                    { return turn.Tail{} }
func (h *memHeld) Writer() turn.Writer                { return h.s.writer }
func (h *memHeld) State() turn.StateStore             { return h.s.state }
func (h *memHeld) Held(context.Context) (bool, error) { return h.s.held, nil }
func (h *memHeld) Release(context.Context) error {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	h.s.released++
	return nil
}

func lifecycle(t *testing.T, exec turn.Executor, s *memSessions) *turn.Lifecycle {
	limits := config.BudgetValues{MaxIterations: 4, MaxToolCalls: 4, MaxRepeatedToolFailures: 2, WallClock: config.Duration(wait)}
	return &turn.Lifecycle{
		Loop: &turn.Loop{Exec: exec, Routes: routes{}, Budgets: config.Budgets{BudgetValues: limits, Ceiling: limits},
			ToolTimeout: time.Second, CallKey: testKey, Log: testLog(t)},
		Sessions: s, MaxDeliveries: 3, Log: testLog(t),
	}
}

func answer(text string) *script {
	return &script{responses: []*assemble.Response{{Text: text, FinishReason: wire.FinishStop, Terminal: true}}}
}

func delivery(seq uint64) turn.Delivery {
	return turn.Delivery{Codec: wire.JSON, Seq: seq, Request: &wire.TurnRequest{
		SessionID: "s", TurnID: "t1", Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "hi"}},
	}}
}

func record(t *testing.T, s *memSessions) turn.Record {
	t.Helper()
	b, ok, _ := s.state.Get(context.Background(), turn.RecordKey("s", "t1"))
	if !ok {
		t.Fatal("the turn has no record")
	}
	var rec turn.Record
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestLifecycleKinds: what a delivery is comes from the turn's record, not
// from a delivery count.
func TestLifecycleKinds(t *testing.T) {
	ctx := context.Background()
	s := newSessions()
	s.head = 7
	exec := answer("hello")
	lc := lifecycle(t, exec, s)

	// New: accepted (its record names the request), run, ended, released.
	v := lc.Deliver(ctx, delivery(7))
	v.Finish(ctx)
	if v.Settle != turn.SettleAck || v.What != wire.EventTurnCompleted {
		t.Fatalf("first delivery = %+v; want ack, completed", v)
	}
	if rec := record(t, s); rec.Seq != 7 || rec.End == nil || rec.End.Type != wire.EventTurnCompleted {
		t.Fatalf("record = %+v; want seq 7, ended completed", rec)
	}
	if s.released != 1 || exec.calls != 1 || s.terminals["t1"] != 1 {
		t.Fatalf("released %d, provider calls %d, terminals %d; want 1 each", s.released, exec.calls, s.terminals["t1"])
	}

	// A redelivery of the ended request (a restarted server may number it
	// 1 again): its terminal event again, deduplicated downstream; never
	// run again.
	v = lc.Deliver(ctx, delivery(7))
	if v.Settle != turn.SettleAck || v.What != "ended" || exec.calls != 1 {
		t.Fatalf("redelivery of an ended turn = %+v, provider calls %d; want ack, ended, 1", v, exec.calls)
	}
	if s.terminals["t1"] != 2 {
		t.Fatalf("terminal events written = %d; want the republish", s.terminals["t1"])
	}

	// Another request with the same turn id: a resubmission, acked,
	// naming the request it duplicates (the worker reports it), with
	// nothing written under the lease.
	events := len(s.writer.events)
	s.head = 9
	v = lc.Deliver(ctx, delivery(9))
	if v.Settle != turn.SettleAck || v.What != "duplicate" || v.Duplicate == nil || v.Duplicate.Of != 7 || len(s.writer.events) != events || exec.calls != 1 {
		t.Fatalf("resubmission = %+v; want an ack, a duplicate of request 7", v)
	}
}

// TestLifecycleResumesWhateverTheDeliveryCount: a delivery of an accepted,
// unended turn resumes it, also when it looks like a first delivery.
func TestLifecycleResumesWhateverTheDeliveryCount(t *testing.T) {
	ctx := context.Background()
	s := newSessions()
	s.head = 4
	exec := answer("resumed")
	lc := lifecycle(t, exec, s)
	// The first delivery died after writing the input: its record and the
	// user message are stored.
	if err := s.state.Put(ctx, turn.RecordKey("s", "t1"), []byte(`{"v":1,"seq":4}`)); err != nil {
		t.Fatal(err)
	}
	s.log = []wire.Message{{SessionID: "s", TurnID: "t1", Seq: 1, Role: wire.RoleUser, Content: "hi"}}
	d := delivery(4)
	d.Waits = 0
	v := lc.Deliver(ctx, d)
	if v.Settle != turn.SettleAck || v.What != wire.EventTurnCompleted {
		t.Fatalf("Deliver() = %+v; want the turn resumed and completed", v)
	}
	if len(s.log) != 2 || s.log[1].Role != wire.RoleAssistant {
		t.Fatalf("log = %+v; want the input once, then the answer", s.log)
	}
}

// TestLifecycleOrder: a request waits while an earlier one of its session
// is pending (handed back with a delay, writing and holding nothing), and
// one no longer pending is left to whoever settled it.
func TestLifecycleOrder(t *testing.T) {
	ctx := context.Background()
	s := newSessions()
	exec := answer("x")
	lc := lifecycle(t, exec, s)

	s.head = 3
	d := delivery(5)
	d.Waits = 2
	v := lc.Deliver(ctx, d)
	if v.Settle != turn.SettleWait || v.Delay != turn.WaitDelay(2) {
		t.Fatalf("behind an earlier request: %+v; want wait %v", v, turn.WaitDelay(2))
	}
	if len(s.takes) != 0 || len(s.writer.events) != 0 || exec.calls != 0 {
		t.Fatal("a waiting delivery took the lease or wrote")
	}
	s.head = 0
	if v := lc.Deliver(ctx, delivery(5)); v.Settle != turn.SettleLeave {
		t.Fatalf("no longer pending: %+v; want leave", v)
	}
	if turn.WaitDelay(0) <= 0 || turn.WaitDelay(100) > 2*time.Second {
		t.Errorf("WaitDelay bounds: %v, %v", turn.WaitDelay(0), turn.WaitDelay(100))
	}
}

// leftOpen makes t1 a turn of request 2 that an earlier delivery accepted
// and left with call c1 open.
func leftOpen(t *testing.T, s *memSessions) {
	t.Helper()
	if err := s.state.Put(context.Background(), turn.RecordKey("s", "t1"), []byte(`{"v":1,"seq":2}`)); err != nil {
		t.Fatal(err)
	}
	s.log = []wire.Message{
		{SessionID: "s", TurnID: "t1", Seq: 1, Role: wire.RoleUser, Content: "hi"},
		{SessionID: "s", TurnID: "t1", Seq: 2, Role: wire.RoleAssistant, Step: 1, FinishReason: wire.FinishToolCalls,
			ToolCalls: []wire.Call{{ID: "c1", Name: "tool", Arguments: "{}"}}},
	}
}

// TestLifecycleExhausted: past MaxDeliveries takes, the turn is failed
// once, and the call its log left open gets an explicit result.
func TestLifecycleExhausted(t *testing.T) {
	ctx := context.Background()
	s := newSessions()
	s.head = 2
	exec := answer("never")
	lc := lifecycle(t, exec, s)
	leftOpen(t, s)
	s.takes["t1/2"] = 3 // three deliveries took the lease and died
	v := lc.Deliver(ctx, delivery(2))
	if v.Settle != turn.SettleTerm || v.Reason != turn.ReasonExhausted || exec.calls != 0 {
		t.Fatalf("Deliver() = %+v (provider calls %d); want term, %s, no call", v, exec.calls, turn.ReasonExhausted)
	}
	last := s.log[len(s.log)-1]
	if last.Role != wire.RoleTool || last.ToolCallID != "c1" || !last.IsError || !last.Synthesized {
		t.Fatalf("last message = %+v; want a synthesized error result for c1", last)
	}
	if rec := record(t, s); rec.End == nil || rec.End.Type != wire.EventTurnFailed {
		t.Fatalf("record = %+v; want ended failed", rec)
	}
}

// TestLifecycleFenced: a delivery whose writes are refused because another
// took the lease leaves the request untouched; one refused while its lease
// is still its own (a marker aged out) hands it back to be taken anew.
func TestLifecycleFenced(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		held bool
		want turn.Settle
	}{{false, turn.SettleLeave}, {true, turn.SettleRetry}} {
		s := newSessions()
		s.head = 1
		s.held = tc.held
		s.writer.failAfter, s.writer.failWith = 1, fmt.Errorf("refused: %w", turn.ErrFenced)
		v := lifecycle(t, answer("x"), s).Deliver(ctx, delivery(1))
		if v.Settle != tc.want || !errors.Is(v.Err, turn.ErrFenced) {
			t.Errorf("held=%v: Deliver() = %+v; want settle %d", tc.held, v, tc.want)
		}
		if s.released != 0 {
			t.Errorf("held=%v: a fenced delivery released the lease", tc.held)
		}
	}
	// A take overtaken by another: leave.
	s := newSessions()
	s.head = 1
	s.takeErr = fmt.Errorf("lost: %w", turn.ErrFenced)
	if v := lifecycle(t, answer("x"), s).Deliver(ctx, delivery(1)); v.Settle != turn.SettleLeave {
		t.Errorf("overtaken take: %+v; want leave", v)
	}
}

// TestDispatchRetried: a dispatch whose publish ack is lost is retried
// (deduplicated by the call's identity downstream) instead of blocking the
// turn until its wall clock.
func TestDispatchRetried(t *testing.T) {
	ctx := context.Background()
	s := newSessions()
	s.head = 1
	s.writer.dispatchFails = 2
	s.writer.answers = make(chan wire.ToolResult, 4)
	lc := lifecycle(t, callThenAnswer("calc", `{}`), s)
	d := delivery(1)
	d.Request.Tools = []wire.Tool{{Name: "calc", Description: "d", Parameters: map[string]any{"type": "object"}}}
	d.Results = func(context.Context, turn.ResultsFrom) (turn.Results, error) {
		return chanResults(s.writer.answers), nil
	}
	v := lc.Deliver(ctx, d)
	if v.Settle != turn.SettleAck || v.What != wire.EventTurnCompleted {
		t.Fatalf("Deliver() = %+v; want completed", v)
	}
	if s.writer.dispatches != 3 {
		t.Errorf("dispatches = %d; want 2 lost and 1 stored", s.writer.dispatches)
	}
	for _, m := range s.log {
		if m.Role == wire.RoleTool && (m.IsError || m.Content != "42") {
			t.Errorf("tool message %+v; want the tool's answer", m)
		}
	}
}

// TestLifecycleCancelledBeforeRun: a turn cancelled before a delivery ran
// it (a cancel stored, or its context cancelled by request while it waited
// for the lease) ends turn.failed "cancelled" under the lease, once,
// without a provider call; a resumed turn's open call gets an explicit
// result. A store that cannot be read hands the request back.
func TestLifecycleCancelledBeforeRun(t *testing.T) {
	stored := func(context.Context) (bool, error) { return true, nil }
	tests := []struct {
		name      string
		resumed   bool
		cancelled func(context.Context) (bool, error)
		// byRequest cancels the delivery's context with ErrCancelled
		// before it starts; duringRead while the store is read.
		byRequest, duringRead bool
	}{
		{name: "stored", cancelled: stored},
		{name: "stored, resumed", resumed: true, cancelled: stored},
		{name: "cancelled while waiting", byRequest: true},
		{name: "cancelled while the store is read", duringRead: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSessions()
			s.head = 2
			exec := answer("never")
			lc := lifecycle(t, exec, s)
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			d := delivery(2)
			d.Cancelled = tt.cancelled
			if tt.duringRead {
				d.Cancelled = func(context.Context) (bool, error) {
					cancel(turn.ErrCancelled)
					return false, context.Canceled
				}
			}
			if tt.byRequest {
				cancel(turn.ErrCancelled)
			}
			if tt.resumed {
				leftOpen(t, s)
			}
			v := lc.Deliver(ctx, d)
			v.Finish(ctx)
			if v.Settle != turn.SettleAck || v.What != wire.EventTurnFailed || v.Reason != turn.ReasonCancelled {
				t.Fatalf("Deliver() = %+v; want ack, %s, %s", v, wire.EventTurnFailed, turn.ReasonCancelled)
			}
			if exec.calls != 0 || s.terminals["t1"] != 1 || s.released != 1 {
				t.Errorf("provider calls %d, terminals %d, released %d; want 0, 1, 1", exec.calls, s.terminals["t1"], s.released)
			}
			for _, ev := range s.writer.events {
				switch {
				case ev.Type == wire.EventTurnFailed && ev.Payload["reason"] == turn.ReasonCancelled:
				case ev.Type == wire.EventToolRepaired && tt.resumed: // the open call closed
				default:
					t.Errorf("event %s %v; want only turn.failed cancelled (and a resumed turn's repairs)", ev.Type, ev.Payload)
				}
			}
			if rec := record(t, s); rec.Seq != 2 || rec.End == nil || rec.End.Type != wire.EventTurnFailed {
				t.Errorf("record = %+v; want seq 2, ended failed", rec)
			}
			if tt.resumed {
				last := s.log[len(s.log)-1]
				if last.Role != wire.RoleTool || last.ToolCallID != "c1" || !last.IsError || !last.Synthesized {
					t.Errorf("last message = %+v; want a synthesized error result for c1", last)
				}
			}
		})
	}

	t.Run("unreadable store", func(t *testing.T) {
		s := newSessions()
		s.head = 2
		exec := answer("never")
		d := delivery(2)
		d.Cancelled = func(context.Context) (bool, error) { return false, errors.New("nats: timeout") }
		v := lifecycle(t, exec, s).Deliver(context.Background(), d)
		if v.Settle != turn.SettleRetry || exec.calls != 0 || s.terminals["t1"] != 0 {
			t.Errorf("Deliver() = %+v (provider calls %d); want retry, no call, no terminal", v, exec.calls)
		}
	})
}

package turn_test

import (
	"context"
	"errors"
	"testing"

	"github.com/turnstream/turnstream/internal/turn"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestAbortNotStoredIsRetried: an abort whose end could not be stored
// (the store is in trouble: often why the deliveries were exhausted) does
// not terminate the request, which would leave the turn without a terminal
// event for good: it is handed back.
func TestAbortNotStoredIsRetried(t *testing.T) {
	ctx := context.Background()
	s := newSessions()
	s.head = 2
	lc := lifecycle(t, answer("never"), s)
	if err := s.state.Put(ctx, turn.RecordKey("s", "t1"), []byte(`{"v":1,"seq":2}`)); err != nil {
		t.Fatal(err)
	}
	s.takes["t1/2"] = 3
	s.writer.failWith = errors.New("nats: timeout") // transient, not fenced
	v := lc.Deliver(ctx, delivery(2))
	if v.Settle == turn.SettleTerm && s.terminals["t1"] == 0 {
		t.Errorf("Deliver() = %+v: the request is terminated but no terminal event was stored (turn lost)", v)
	}
}

// TestIdentityReadAfterTheTake: another delivery of the same request may
// end the turn between this delivery's first read of the record and its
// take (it woke from a pause past its ack wait and finished before
// acking). What the delivery is, is decided again after the take, so the
// ended turn does not run again.
func TestIdentityReadAfterTheTake(t *testing.T) {
	ctx := context.Background()
	s := newSessions()
	s.head = 4
	exec := answer("again")
	lc := lifecycle(t, exec, s)
	// The turn was accepted, its input written; it is running elsewhere.
	if err := s.state.Put(ctx, turn.RecordKey("s", "t1"), []byte(`{"v":1,"seq":4}`)); err != nil {
		t.Fatal(err)
	}
	s.log = []wire.Message{{SessionID: "s", TurnID: "t1", Seq: 1, Role: wire.RoleUser, Content: "hi"}}
	// The other delivery ends the turn as failed (say a provider failure)
	// right before this delivery's take.
	lc.Sessions = &endBeforeTake{memSessions: s}
	v := lc.Deliver(ctx, delivery(4))
	if exec.calls != 0 {
		t.Errorf("Deliver() = %+v: ran the provider %d time(s) for a turn whose end was recorded before the take", v, exec.calls)
	}
	if rec := record(t, s); rec.End == nil || rec.End.Type != wire.EventTurnFailed {
		t.Errorf("end record now %+v; the recorded turn.failed was overwritten", rec.End)
	}
}

type endBeforeTake struct{ *memSessions }

func (e *endBeforeTake) Take(ctx context.Context, lk turn.Look, turnID string, seq uint64, c wire.Codec, admitted func() error) (turn.Held, error) {
	_ = e.state.Put(ctx, turn.RecordKey(lk.(memLook).session, turnID), []byte(`{"v":1,"seq":4,"end":{"v":1,"type":"turn.failed","payload":{"reason":"provider_failed"}}}`))
	e.terminals[turnID]++
	return e.memSessions.Take(ctx, lk, turnID, seq, c, admitted)
}

// TestTurnInLogWithoutRecordRunsOnce: a turn the session log already
// has but no record names (ended by a release before turn records, or
// whose record expired) is not run again.
func TestTurnInLogWithoutRecordRunsOnce(t *testing.T) {
	ctx := context.Background()
	s := newSessions()
	s.head = 4
	exec := answer("again")
	lc := lifecycle(t, exec, s)
	if err := s.state.Put(ctx, "s.t1.=end", []byte(`{"v":1,"type":"turn.failed","payload":{"reason":"provider_failed"}}`)); err != nil {
		t.Fatal(err)
	}
	s.log = []wire.Message{{SessionID: "s", TurnID: "t1", Seq: 1, Role: wire.RoleUser, Content: "hi"}}
	v := lc.Deliver(ctx, delivery(4))
	if exec.calls != 0 {
		t.Errorf("Deliver() = %+v: re-ran a turn that ended under the previous release (=end key)", v)
	}
}

// TestInputWithoutRecordResumes: the turn's record and its input messages
// are written together, so a delivery may stop with the input stored and
// the record not. The input names the request that appended it, so the
// turn in the log is this request's: it runs, once, rather than being taken
// for a resubmission of a turn that ran.
func TestInputWithoutRecordResumes(t *testing.T) {
	ctx := context.Background()
	s := newSessions()
	s.head = 5
	exec := answer("resumed")
	lc := lifecycle(t, exec, s)
	s.log = []wire.Message{{SessionID: "s", TurnID: "t1", Seq: 1, Role: wire.RoleUser, Content: "hi"}}
	s.requests = []uint64{5} // appended by this request's stopped delivery
	v := lc.Deliver(ctx, delivery(5))
	v.Finish(ctx)
	if v.Settle != turn.SettleAck || v.What != wire.EventTurnCompleted || exec.calls != 1 {
		t.Fatalf("Deliver() = %+v with %d provider call(s); want the turn run once to completion", v, exec.calls)
	}
	if rec := record(t, s); rec.Seq != 5 || rec.End == nil {
		t.Errorf("record = %+v; want the request's, ended", rec)
	}
}

package worker_test

import (
	"testing"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestInputWithoutRecordAfterAnotherTake: the turn's record and its input
// are pipelined, so a delivery can stop with the input stored and the
// record not (the record's publish failed, a crash of the store). Another
// request's take may come in between: here a late (paused) delivery of the
// session's previous, ended turn takes the lease, republishes its end and
// releases. The stopped turn's redelivery finds its input in the log
// without a record; the input names its request (wire.HeaderRequest), so
// it runs the turn, which ends once, instead of being acked as a duplicate.
func TestInputWithoutRecordAfterAnotherTake(t *testing.T) {
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{}))
	ctx := ctxFor(t)
	first := e.startWorker()
	body := func(turn string) []byte {
		return []byte(`{"session_id":"lost","turn_id":"` + turn + `","input":[{"role":"user","content":"hello ` + turn + `"}]}`)
	}
	p, err := e.js.Publish(ctx, "turn.submit.lost", body("t0"))
	if err != nil {
		t.Fatal(err)
	}
	if got := waitTerminal(t, e.js, "lost", "t0"); got.Type != wire.EventTurnCompleted {
		t.Fatalf("t0 ended %s", got.Type)
	}
	first.stop(t)

	r, err := e.js.Publish(ctx, "turn.submit.lost", body("t1"))
	if err != nil {
		t.Fatal(err)
	}
	_, js := e.srv.JetStream()
	b, err := bus.New(ctx, js, wire.Subjects{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// t1's first delivery: it took the lease, its input was stored, its
	// record was not, and it stopped.
	l, err := b.TakeLease(ctx, st, "lost", "t1", r.Sequence, "stopped")
	if err != nil {
		t.Fatal(err)
	}
	log, err := b.LoadLog(ctx, "lost")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Turn(wire.JSON, log).Append(ctx, &wire.Message{SessionID: "lost", TurnID: "t1", Role: wire.RoleUser, Content: "hello t1"}); err != nil {
		t.Fatal(err)
	}
	// A late delivery of t0 (paused before its take, t0 has since been
	// completed and acked) wakes: it takes the lease, finds t0 ended, and
	// releases (what Lifecycle.ended does, its terminal event deduplicated).
	z, err := b.TakeLease(ctx, st, "lost", "t0", p.Sequence, "late")
	if err != nil {
		t.Fatal(err)
	}
	if err := z.Release(ctx); err != nil {
		t.Fatal(err)
	}

	e.startWorker() // t1's redelivery
	eventually(t, "t1's request is settled", func() bool {
		head, err := b.FirstPending(ctx, "lost")
		return err == nil && head == 0
	})
	evs, _ := records[wire.SessionEvent](t, e.js, wire.StreamEvents, wire.Subjects{}.Event("lost"))
	ends := 0
	for _, ev := range evs {
		if ev.TurnID == "t1" && ev.Terminal() {
			ends++
		}
	}
	if ends != 1 {
		t.Errorf("t1 has %d terminal events after its request was acked; want 1 (the turn ran and ended)", ends)
	}
}

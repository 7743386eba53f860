package bus

import (
	"context"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestTakeReadsALogBehindItsRelease: the session's log and its lease are
// read at once, so the log may be served before the releasing turn's last
// append while the lease is served after its release. The release records
// where the log ended; a take from a read of the log short of it reads the
// log again, so the holder never builds on (and numbers positions after)
// a log without the last turn's messages.
func TestTakeReadsALogBehindItsRelease(t *testing.T) {
	srv := natstest.Start(t)
	_, js := srv.JetStream()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := (Topology{}).Ensure(ctx, js); err != nil {
		t.Fatal(err)
	}
	b, err := New(ctx, js, wire.Subjects{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l, err := b.TakeLease(ctx, st, "behind", "t1", 1, "w")
	if err != nil {
		t.Fatal(err)
	}
	w := l.Turn(wire.JSON, nil)
	for _, c := range []string{"one", "two"} {
		if err := w.Append(ctx, &wire.Message{SessionID: "behind", TurnID: "t1", Role: wire.RoleUser, Content: c}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := b.ReadSession(ctx, "behind")
	if err != nil {
		t.Fatal(err)
	}
	// As if the log had been served before the second append.
	s.Log = &Log{Messages: s.Log.Messages[:1:1], Stored: s.Log.Stored[:1:1], LastStreamSeq: s.Log.LastStreamSeq - 1}
	b.cache.invalidate("behind") // and kept so
	e := b.cache.entry("behind")
	e.state, e.stateSeq = s.entry.state, s.entry.stateSeq
	s.entry = e

	_, view, err := b.Take(ctx, st, s, "t2", 2, "w", nil)
	if err != nil {
		t.Fatalf("Take() = %v", err)
	}
	if n := len(view.Log.Messages); n != 2 {
		t.Fatalf("the holder's log has %d messages; want the 2 the released turn stored", n)
	}
}

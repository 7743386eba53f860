package bus_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/pkg/wire"
)

// appendTurn runs one turn of session on b as a worker does: take the lease
// from a read of the session, append n messages, release.
func appendTurn(t *testing.T, b *bus.Bus, st *bus.State, session, turn string, seq uint64, n int) {
	t.Helper()
	ctx := t.Context()
	s, err := b.ReadSession(ctx, session)
	if err != nil {
		t.Fatalf("ReadSession(%s) = %v", session, err)
	}
	l, view, err := b.Take(ctx, st, s, turn, seq, "w", nil)
	if err != nil {
		t.Fatalf("Take(%s) = %v", turn, err)
	}
	w := l.Turn(wire.JSON, view.Log)
	for i := range n {
		m := &wire.Message{SessionID: session, TurnID: turn, Role: wire.RoleUser, Content: fmt.Sprintf("%s-%d", turn, i)}
		if err := w.Append(ctx, m); err != nil {
			t.Fatalf("Append(%s) = %v", m.Content, err)
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release(%s) = %v", turn, err)
	}
}

// contents lists a log's messages.
func contents(log *bus.Log) []string {
	var out []string
	for _, m := range log.Messages {
		out = append(out, m.Content)
	}
	return out
}

// TestSessionReadsKeepUpWithOtherWorkers: a worker keeps the sessions it
// read and reads only what was stored since; turns run by another worker
// (another connection, its own cache) in between are all in its next read,
// in order, once each, as a fresh read of the log has them, and its take
// from that read fences and positions correctly.
func TestSessionReadsKeepUpWithOtherWorkers(t *testing.T) {
	js, a, st := leaseEnv(t)
	ctx := t.Context()
	b, err := bus.New(ctx, js, wire.Subjects{})
	if err != nil {
		t.Fatal(err)
	}
	appendTurn(t, a, st, "kept", "t1", 1, 2)
	if _, err := a.ReadSession(ctx, "kept"); err != nil { // a keeps the session
		t.Fatal(err)
	}
	appendTurn(t, b, st, "kept", "t2", 2, 3) // another worker's turns
	appendTurn(t, b, st, "kept", "t3", 3, 1)
	s, err := a.ReadSession(ctx, "kept")
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := a.LoadLog(ctx, "kept")
	if err != nil {
		t.Fatal(err)
	}
	got, want := fmt.Sprint(contents(s.Log)), fmt.Sprint(contents(fresh))
	if got != want || len(s.Log.Messages) != 6 || s.Log.LastStreamSeq != fresh.LastStreamSeq {
		t.Fatalf("kept session log = %s (last seq %d); a fresh read has %s (last seq %d)", got, s.Log.LastStreamSeq, want, fresh.LastStreamSeq)
	}
	// a's take from its read sees b's release: it positions after b's
	// messages, and its append is stored.
	l, view, err := a.Take(ctx, st, s, "t4", 4, "a", nil)
	if err != nil {
		t.Fatalf("Take(t4) = %v", err)
	}
	m := &wire.Message{SessionID: "kept", TurnID: "t4", Role: wire.RoleUser, Content: "t4-0"}
	if err := l.Turn(wire.JSON, view.Log).Append(ctx, m); err != nil {
		t.Fatalf("Append(t4) = %v", err)
	}
	if m.Seq != 7 {
		t.Errorf("t4's message is at position %d; want 7", m.Seq)
	}
}

// TestStaleReadTakesTheLeaseAnew: a take from a read of the session made
// before another worker took and released its lease does not fail for it
// (nor take the lease from a revision that is gone): it reads the lease
// again, and builds on everything the other worker stored.
func TestStaleReadTakesTheLeaseAnew(t *testing.T) {
	js, a, st := leaseEnv(t)
	ctx := t.Context()
	b, err := bus.New(ctx, js, wire.Subjects{})
	if err != nil {
		t.Fatal(err)
	}
	appendTurn(t, a, st, "stale", "t1", 1, 1)
	s, err := a.ReadSession(ctx, "stale") // read, then overtaken
	if err != nil {
		t.Fatal(err)
	}
	appendTurn(t, b, st, "stale", "t2", 2, 2)
	l, view, err := a.Take(ctx, st, s, "t3", 3, "a", nil)
	if err != nil {
		t.Fatalf("Take(t3) from a stale read = %v; want the lease", err)
	}
	if got := fmt.Sprint(contents(view.Log)); got != "[t1-0 t2-0 t2-1]" {
		t.Fatalf("the holder's log = %s; want every message b stored", got)
	}
	m := &wire.Message{SessionID: "stale", TurnID: "t3", Role: wire.RoleUser, Content: "t3-0"}
	if err := l.Turn(wire.JSON, view.Log).Append(ctx, m); err != nil || m.Seq != 4 {
		t.Fatalf("Append(t3) = %v at position %d; want stored at 4", err, m.Seq)
	}
}

// TestReleasedLeaseKeepsItsMarkers: after a release the next take writes
// no fence markers (its writes are fenced by the released holder's), and
// those markers still fence every holder before the released one: a
// zombie of an older epoch can write nothing, while the new holder writes
// every kind of record.
func TestReleasedLeaseKeepsItsMarkers(t *testing.T) {
	js, b, st := leaseEnv(t)
	ctx := t.Context()
	subjects := wire.Subjects{}
	zombie, err := b.TakeLease(ctx, st, "keep", "t1", 1, "zombie") // paused, never releases
	if err != nil {
		t.Fatal(err)
	}
	cur, err := b.TakeLease(ctx, st, "keep", "t1", 1, "cur") // takes over: writes markers
	if err != nil {
		t.Fatal(err)
	}
	if err := cur.Release(ctx); err != nil {
		t.Fatal(err)
	}
	next, err := b.TakeLease(ctx, st, "keep", "t2", 2, "next")
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range bus.FencedKinds {
		s, err := js.Stream(ctx, streamOf(kind))
		if err != nil {
			t.Fatal(err)
		}
		last, err := s.GetLastMsgForSubject(ctx, bus.FenceSubject(subjects, kind, "keep"))
		if err != nil {
			t.Fatal(err)
		}
		var mk struct{ Epoch uint64 }
		_ = wire.JSON.Unmarshal(last.Data, &mk)
		if mk.Epoch != cur.Epoch() {
			t.Errorf("%s marker has epoch %d after a take over a release; want the released holder's %d (no marker written)", kind, mk.Epoch, cur.Epoch())
		}
	}

	zw := zombie.Turn(wire.JSON, nil)
	nw := next.Turn(wire.JSON, nil)
	chunk := func(turn string) *wire.Chunk {
		return &wire.Chunk{SessionID: "keep", TurnID: turn, Step: 1, Attempt: 1, Seq: 1, Delta: &wire.Delta{Text: "x"}}
	}
	ev := func(turn string) *wire.SessionEvent {
		return &wire.SessionEvent{Type: wire.EventTurnAccepted, SessionID: "keep", TurnID: turn}
	}
	_ = zw.Chunk(chunk("t1"))
	_ = zw.Event(ev("t1"))
	if err := zw.Flush(ctx); !errors.Is(err, bus.ErrFenced) {
		t.Errorf("zombie chunk and event flush = %v; want ErrFenced", err)
	}
	if err := zw.Append(ctx, &wire.Message{SessionID: "keep", TurnID: "t1", Role: wire.RoleUser, Content: "late"}); !errors.Is(err, bus.ErrFenced) {
		t.Errorf("zombie append = %v; want ErrFenced", err)
	}
	if err := zombie.State().Put(ctx, "keep.t1.=turn", []byte(`{}`)); !errors.Is(err, bus.ErrFenced) {
		t.Errorf("zombie state put = %v; want ErrFenced", err)
	}
	if err := nw.Chunk(chunk("t2")); err != nil {
		t.Fatal(err)
	}
	if err := nw.Event(ev("t2")); err != nil {
		t.Fatal(err)
	}
	if err := nw.Append(ctx, &wire.Message{SessionID: "keep", TurnID: "t2", Role: wire.RoleUser, Content: "next"}); err != nil {
		t.Errorf("new holder append = %v", err)
	}
	if err := nw.Flush(ctx); err != nil {
		t.Errorf("new holder flush = %v", err)
	}
	if err := next.State().Put(ctx, "keep.t2.=turn", []byte(`{}`)); err != nil {
		t.Errorf("new holder state put = %v", err)
	}
	if n := count(t, js, wire.StreamChunks, subjects.Chunk("keep", "t1")); n != 0 {
		t.Errorf("%d zombie chunks stored; want 0", n)
	}
	if n := count(t, js, wire.StreamChunks, subjects.Chunk("keep", "t2")); n != 1 {
		t.Errorf("%d new holder chunks stored; want 1", n)
	}
}

func streamOf(kind string) string {
	return map[string]string{"message": wire.StreamMessages, "chunk": wire.StreamChunks, "raw": wire.StreamRaw, "event": wire.StreamEvents}[kind]
}

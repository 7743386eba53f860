package bus_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/pkg/wire"
)

func leaseEnv(t *testing.T) (jetstream.JetStream, *bus.Bus, *bus.State) {
	t.Helper()
	srv := natstest.Start(t)
	_, js := srv.JetStream()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	if err := (bus.Topology{}).Ensure(ctx, js); err != nil {
		t.Fatalf("Ensure() = %v", err)
	}
	b, err := bus.New(ctx, js, wire.Subjects{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return js, b, st
}

// count returns how many records are stored on subject.
func count(t *testing.T, js jetstream.JetStream, stream, subject string) uint64 {
	t.Helper()
	s, err := js.Stream(t.Context(), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(t.Context(), jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects[subject]
}

// TestLeaseFencesEveryWrite: once a second delivery takes the session's
// lease, every kind of write the first holder still makes is refused by the
// server (nothing of it is stored), while the new holder writes freely.
func TestLeaseFencesEveryWrite(t *testing.T) {
	js, b, st := leaseEnv(t)
	ctx := t.Context()
	subjects := wire.Subjects{}

	old, err := b.TakeLease(ctx, st, "s1", "t1", 7, "worker-a")
	if err != nil {
		t.Fatalf("TakeLease(first) = %v", err)
	}
	oldLog, err := b.LoadLog(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	ow := old.Turn(wire.JSON, oldLog)
	if err := ow.Append(ctx, &wire.Message{SessionID: "s1", TurnID: "t1", Role: wire.RoleUser, Content: "hi"}); err != nil {
		t.Fatalf("first holder's append before the takeover = %v", err)
	}
	if err := old.State().Put(ctx, "s1.t1.=probe", []byte("1")); err != nil {
		t.Fatalf("first holder's state write before the takeover = %v", err)
	}

	// The second delivery takes over; the first is now a zombie.
	cur, err := b.TakeLease(ctx, st, "s1", "t1", 7, "worker-b")
	if err != nil {
		t.Fatalf("TakeLease(second) = %v", err)
	}
	if cur.Deliveries() != 2 || cur.Epoch() != old.Epoch()+1 {
		t.Fatalf("second take: deliveries %d epoch %d; want 2 and %d", cur.Deliveries(), cur.Epoch(), old.Epoch()+1)
	}
	if held, err := old.Held(ctx); err != nil || held {
		t.Fatalf("old.Held() = %v, %v; want false", held, err)
	}

	chunks := count(t, js, wire.StreamChunks, subjects.Chunk("s1", "t1"))
	raws := count(t, js, wire.StreamRaw, subjects.Raw("s1", "t1"))
	events := count(t, js, wire.StreamEvents, subjects.Event("s1"))
	msgs := count(t, js, wire.StreamMessages, subjects.Message("s1"))

	if err := ow.Chunk(&wire.Chunk{SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 1, Seq: 1, Marker: wire.MarkerCompleted}); err != nil {
		t.Fatal(err)
	}
	if err := ow.Raw(&wire.RawFrame{SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 1, Seq: 1, Bytes: []byte(`{"zombie":true}`)}); err != nil {
		t.Fatal(err)
	}
	if err := ow.Event(&wire.SessionEvent{Type: wire.EventLLMFinish, SessionID: "s1", TurnID: "t1", Time: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := ow.Flush(ctx); !errors.Is(err, bus.ErrFenced) {
		t.Errorf("zombie Flush() = %v; want ErrFenced", err)
	}
	if err := ow.Append(ctx, &wire.Message{SessionID: "s1", TurnID: "t1", Role: wire.RoleAssistant, Content: "zombie"}); !errors.Is(err, bus.ErrFenced) {
		t.Errorf("zombie Append() = %v; want ErrFenced", err)
	}
	if err := ow.Terminal(ctx, &wire.SessionEvent{Type: wire.EventTurnCompleted, SessionID: "s1", TurnID: "t1", Time: time.Now()}); !errors.Is(err, bus.ErrFenced) {
		t.Errorf("zombie Terminal() = %v; want ErrFenced", err)
	}
	if err := old.State().Put(ctx, "s1.=continuation", []byte("zombie")); !errors.Is(err, bus.ErrFenced) {
		t.Errorf("zombie state Put() = %v; want ErrFenced", err)
	}
	if err := old.Release(ctx); !errors.Is(err, bus.ErrFenced) {
		t.Errorf("zombie Release() = %v; want ErrFenced", err)
	}
	if got := count(t, js, wire.StreamChunks, subjects.Chunk("s1", "t1")); got != chunks {
		t.Errorf("chunks stored after the zombie wrote: %d; want %d", got, chunks)
	}
	if got := count(t, js, wire.StreamRaw, subjects.Raw("s1", "t1")); got != raws {
		t.Errorf("raw frames stored after the zombie wrote: %d; want %d", got, raws)
	}
	if got := count(t, js, wire.StreamEvents, subjects.Event("s1")); got != events {
		t.Errorf("events stored after the zombie wrote: %d; want %d", got, events)
	}
	if got := count(t, js, wire.StreamMessages, subjects.Message("s1")); got != msgs {
		t.Errorf("messages stored after the zombie wrote: %d; want %d", got, msgs)
	}
	if _, ok, err := st.Get(ctx, "s1.=continuation"); err != nil || ok {
		t.Errorf("zombie's state write stored: %v, %v", ok, err)
	}

	// The holder writes where the zombie could not.
	curLog, err := b.LoadLog(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(curLog.Messages) != 1 {
		t.Fatalf("log after takeover has %d messages; want the 1 written before it", len(curLog.Messages))
	}
	cw := cur.Turn(wire.JSON, curLog)
	if err := cw.Chunk(&wire.Chunk{SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 1, Seq: 1, Marker: wire.MarkerCompleted}); err != nil {
		t.Fatal(err)
	}
	if err := cw.Raw(&wire.RawFrame{SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 1, Seq: 1, Bytes: []byte(`{"real":true}`)}); err != nil {
		t.Fatal(err)
	}
	if err := cw.Append(ctx, &wire.Message{SessionID: "s1", TurnID: "t1", Role: wire.RoleAssistant, Content: "real"}); err != nil {
		t.Fatalf("holder Append() = %v", err)
	}
	if err := cur.State().Put(ctx, "s1.=continuation", []byte("real")); err != nil {
		t.Fatalf("holder state Put() = %v", err)
	}
	if err := cw.Terminal(ctx, &wire.SessionEvent{Type: wire.EventTurnCompleted, SessionID: "s1", TurnID: "t1", Time: time.Now()}); err != nil {
		t.Fatalf("holder Terminal() = %v", err)
	}
	if err := cur.Release(ctx); err != nil {
		t.Fatalf("holder Release() = %v", err)
	}
	if got := count(t, js, wire.StreamRaw, subjects.Raw("s1", "t1")); got != raws+1 {
		t.Errorf("raw frames stored after the holder wrote one: %d; want %d", got, raws+1)
	}

	// The session's next turn takes a released lease; its markers are
	// where the release recorded them, so the take needs no extra read.
	next, err := b.TakeLease(ctx, st, "s1", "t2", 9, "worker-a")
	if err != nil {
		t.Fatalf("TakeLease(next turn) = %v", err)
	}
	if next.Deliveries() != 1 {
		t.Errorf("next turn's deliveries = %d; want 1", next.Deliveries())
	}
	if err := cur.State().Put(ctx, "s1.=continuation", []byte("late")); !errors.Is(err, bus.ErrFenced) {
		t.Errorf("released holder's state Put() = %v; want ErrFenced", err)
	}
}

// TestLeaseMarkersOnlyMoveForward: a take's markers overwrite only
// markers of earlier epochs. A take that finds a later epoch's marker (it
// paused between its lease write and its markers while another take ran)
// fails with ErrFenced and moves nothing back; one that finds an earlier
// epoch's marker it did not expect overwrites it.
func TestLeaseMarkersOnlyMoveForward(t *testing.T) {
	js, b, st := leaseEnv(t)
	ctx := t.Context()
	subjects := wire.Subjects{}
	marker := func(kind string, epoch int) {
		t.Helper()
		m := &nats.Msg{Subject: bus.FenceSubject(subjects, kind, "s2"), Data: []byte(fmt.Sprintf(`{"epoch":%d,"turn":"tx"}`, epoch)),
			Header: nats.Header{jetstream.MsgRollup: {jetstream.MsgRollupSubject}}}
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	// An unexpected marker of an earlier epoch (epoch 0): overwritten.
	marker("event", 0)
	first, err := b.TakeLease(ctx, st, "s2", "t1", 3, "a")
	if err != nil {
		t.Fatalf("TakeLease over an earlier marker = %v", err)
	}
	// A later epoch's marker appears in one stream before the next take
	// writes its own: that take is overtaken.
	marker("chunk", 1000)
	if _, err := b.TakeLease(ctx, st, "s2", "t1", 3, "b"); !errors.Is(err, bus.ErrFenced) {
		t.Fatalf("TakeLease under a later marker = %v; want ErrFenced", err)
	}
	s, err := js.Stream(ctx, wire.StreamChunks)
	if err != nil {
		t.Fatal(err)
	}
	last, err := s.GetLastMsgForSubject(ctx, bus.FenceSubject(subjects, "chunk", "s2"))
	if err != nil {
		t.Fatal(err)
	}
	if string(last.Data) != `{"epoch":1000,"turn":"tx"}` {
		t.Errorf("the later marker was overwritten: %s", last.Data)
	}
	if held, _ := first.Held(ctx); held {
		t.Error("the first take still holds the lease after a second take advanced it")
	}
}

// TestFreshTakeSeesAHolderThatCameAfterItsRead: a take over a session read
// with no lease and no marker keeps that read (nobody could write since),
// unless a holder appeared in between: here another worker took the lease,
// appended, and lost its lease key (an operator deleted it), so the take's
// compare-and-set succeeds over nothing; its markers then meet the other
// holder's, and it reads the session again and builds on the message.
func TestFreshTakeSeesAHolderThatCameAfterItsRead(t *testing.T) {
	js, b, st := leaseEnv(t)
	ctx := t.Context()
	read, err := b.ReadSession(ctx, "s9")
	if err != nil {
		t.Fatal(err)
	}

	other, err := bus.New(ctx, js, wire.Subjects{})
	if err != nil {
		t.Fatal(err)
	}
	ost, err := other.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ol, err := other.TakeLease(ctx, ost, "s9", "t1", 1, "worker-b")
	if err != nil {
		t.Fatal(err)
	}
	olog, err := other.LoadLog(ctx, "s9")
	if err != nil {
		t.Fatal(err)
	}
	if err := ol.Turn(wire.JSON, olog).Append(ctx, &wire.Message{SessionID: "s9", TurnID: "t1", Role: wire.RoleUser, Content: "hi"}); err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, bus.StateBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, bus.LeaseKey("s9")); err != nil {
		t.Fatal(err)
	}

	l, view, err := b.Take(ctx, st, read, "t2", 2, "worker-a", nil)
	if err != nil {
		t.Fatalf("Take() = %v", err)
	}
	if n := len(view.Log.Messages); n != 1 {
		t.Fatalf("the take builds on %d messages, want the other holder's 1", n)
	}
	if l.Epoch() <= 1 {
		t.Fatalf("epoch %d, want above the other holder's 1", l.Epoch())
	}
	// And the other holder is fenced.
	if err := ol.Turn(wire.JSON, olog).Append(ctx, &wire.Message{SessionID: "s9", TurnID: "t1", Role: wire.RoleAssistant, Content: "late"}); !errors.Is(err, bus.ErrFenced) {
		t.Fatalf("the other holder's append after the take = %v, want ErrFenced", err)
	}
}

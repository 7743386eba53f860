package client_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/wire"
)

// followedStreams are the streams a Turn reads.
var followedStreams = []string{wire.StreamChunks, wire.StreamMessages, wire.StreamEvents}

// consumers counts the consumers of the followed streams.
func consumers(ctx context.Context, t *testing.T, js jetstream.JetStream) int {
	t.Helper()
	n := 0
	for _, name := range followedStreams {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatalf("Stream(%s) = %v; want nil", name, err)
		}
		n += s.CachedInfo().State.Consumers
	}
	return n
}

// TestFollowCreatesNoConsumer: submitting and following a whole turn makes
// no consumer request on the followed streams, and leaves no consumer.
func TestFollowCreatesNoConsumer(t *testing.T) {
	e := start(t)
	ctx := testContext(t)
	c := newClient(t, e)

	// Every consumer request of the account, from any connection.
	spyConn := e.srv.Connect()
	spy, err := spyConn.SubscribeSync("$JS.API.CONSUMER.>")
	if err != nil {
		t.Fatalf("SubscribeSync() = %v; want nil", err)
	}
	if err := spyConn.FlushWithContext(ctx); err != nil {
		t.Fatalf("Flush() = %v; want nil", err)
	}
	before := consumers(ctx, t, e.js)

	tr, err := c.Submit(ctx, wire.TurnRequest{SessionID: "s1", TurnID: "t1", Input: userInput("hi")})
	if err != nil {
		t.Fatalf("Submit() = %v; want nil", err)
	}
	closeTurn(t, tr)
	req, codec := pullRequest(ctx, t, e)
	w := newWorker(ctx, t, e, req.SessionID, req.TurnID, codec)
	w.event(wire.EventTurnAccepted)
	w.append(wire.RoleUser, "hi")
	w.chunks("Hel", "lo")
	first, err := tr.Next(ctx)
	if err != nil {
		t.Fatalf("Next() = %v; want an update", err)
	}
	if n := consumers(ctx, t, e.js); n != before {
		t.Errorf("consumers of the followed streams while following = %d; want %d", n, before)
	}
	w.append(wire.RoleAssistant, "Hello")
	w.terminal(wire.EventTurnCompleted)
	got := collect(ctx, t, tr)
	got.prepend(label(first))
	checkTrace(t, got, []string{"Hel", "lo"}, []string{"user:hi", "assistant:Hello"},
		[]string{wire.EventTurnAccepted, wire.EventTurnCompleted})

	if n := consumers(ctx, t, e.js); n != before {
		t.Errorf("consumers of the followed streams after the turn = %d; want %d", n, before)
	}
	// A consumer request was answered before the follower went on, so
	// once both connections flushed, the spy has a copy of it.
	for _, nc := range []*nats.Conn{e.nc, spyConn} {
		if err := nc.FlushWithContext(ctx); err != nil {
			t.Fatalf("Flush() = %v; want nil", err)
		}
	}
	for {
		m, err := spy.NextMsg(0)
		if err != nil {
			break // nothing pending
		}
		for _, name := range followedStreams {
			if strings.Contains(m.Subject, "."+name+".") || strings.HasSuffix(m.Subject, "."+name) {
				t.Errorf("consumer request %s while following; want none", m.Subject)
			}
		}
	}
}

// dropper is a Tuning drop hook: it drops the live records whose label
// (see label) is listed, each time one is republished, and counts them.
type dropper struct {
	mu      sync.Mutex
	labels  []string
	dropped []string
}

func newDropper(labels ...string) *dropper { return &dropper{labels: labels} }

func (d *dropper) drop(m *nats.Msg) bool {
	l := liveLabel(m)
	d.mu.Lock()
	defer d.mu.Unlock()
	if !slices.Contains(d.labels, l) {
		return false
	}
	d.dropped = append(d.dropped, l)
	return true
}

// await waits until the listed labels were dropped: the turn's live
// records are in order per subject only, so a test that ends the turn
// before its drops happened could finish without them.
func (d *dropper) await(ctx context.Context, t *testing.T, labels ...string) {
	t.Helper()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		d.mu.Lock()
		all := true
		for _, l := range labels {
			all = all && slices.Contains(d.dropped, l)
		}
		d.mu.Unlock()
		if all {
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("live records %q never came to drop", labels)
		}
	}
}

func (d *dropper) check(t *testing.T) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if got := slices.Sorted(slices.Values(d.dropped)); !slices.Equal(got, slices.Sorted(slices.Values(d.labels))) {
		t.Errorf("live records dropped = %q; want %q once each", got, d.labels)
	}
}

// liveLabel decodes a republished record into its label.
func liveLabel(m *nats.Msg) string {
	ct := m.Header.Get(wire.HeaderContentType)
	var u client.Update
	var err error
	switch {
	case strings.HasPrefix(m.Subject, "turn.live.chunk."):
		u.Chunk = new(wire.Chunk)
		err = wire.Decode(ct, m.Data, u.Chunk)
	case strings.HasPrefix(m.Subject, "turn.live.message."):
		u.Message = new(wire.Message)
		err = wire.Decode(ct, m.Data, u.Message)
	case strings.HasPrefix(m.Subject, "turn.live.event."):
		u.Event = new(wire.SessionEvent)
		err = wire.Decode(ct, m.Data, u.Event)
	}
	if err != nil {
		return ""
	}
	return label(u)
}

// caughtUp follows a turn whose first record, its accepted event, is
// written, and reads that event: the Turn has then read every stream up to
// what is stored, and what follows reaches it live.
func caughtUp(ctx context.Context, t *testing.T, c *client.Client, w *worker) *client.Turn {
	t.Helper()
	tr, err := c.Follow(ctx, w.session, w.turn)
	if err != nil {
		t.Fatalf("Follow() = %v; want nil", err)
	}
	closeTurn(t, tr)
	w.event(wire.EventTurnAccepted)
	u, err := tr.Next(ctx)
	if err != nil || label(u) != "event:"+wire.EventTurnAccepted {
		t.Fatalf("Next() = %s, %v; want the accepted event", label(u), err)
	}
	return tr
}

// TestGapFilledByDirectGet: live records the follower never receives are
// read by direct get once a later record of their subject reveals the gap:
// in order, each once.
func TestGapFilledByDirectGet(t *testing.T) {
	d := newDropper("chunk:b", "chunk:c", "message:user:lost", "event:"+wire.EventLLMRequest)
	client.Tuning(t, 0, 0, d.drop)
	e := start(t)
	ctx := testContext(t)
	c := newClient(t, e)
	w := newWorker(ctx, t, e, "s1", "t1", wire.JSON)
	tr := caughtUp(ctx, t, c, w)

	w.chunks("a", "b", "c", "d")
	w.append(wire.RoleUser, "first")
	w.append(wire.RoleUser, "lost")
	w.append(wire.RoleUser, "after")
	w.event(wire.EventLLMRequest)
	w.event(wire.EventLLMFinish)
	w.chunks("e")
	d.await(ctx, t, d.labels...) // before the turn can end
	w.terminal(wire.EventTurnCompleted)

	got := collect(ctx, t, tr)
	got.prepend("event:" + wire.EventTurnAccepted)
	checkTrace(t, got,
		[]string{"a", "b", "c", "d", "e"},
		[]string{"user:first", "user:lost", "user:after"},
		[]string{wire.EventTurnAccepted, wire.EventLLMRequest, wire.EventLLMFinish, wire.EventTurnCompleted})
	d.check(t)
}

// TestIdleCheckRecoversTail: a lost live record with nothing after it on
// its subject (here the terminal event, and the last chunk and message) is
// found by the check of the streams' tails an idle follower makes.
func TestIdleCheckRecoversTail(t *testing.T) {
	tests := []struct {
		name string
		drop []string
	}{
		{"terminal", []string{"event:" + wire.EventTurnCompleted}},
		{"terminal, last chunk and message", []string{"event:" + wire.EventTurnCompleted, "chunk:z", "message:assistant:yz"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDropper(tt.drop...)
			client.Tuning(t, 0, 50*time.Millisecond, d.drop)
			e := start(t)
			ctx := testContext(t)
			c := newClient(t, e)
			w := newWorker(ctx, t, e, "s1", "t1", wire.JSON)
			tr := caughtUp(ctx, t, c, w)

			w.chunks("y", "z")
			w.append(wire.RoleAssistant, "yz")
			w.terminal(wire.EventTurnCompleted)

			got := collect(ctx, t, tr)
			got.prepend("event:" + wire.EventTurnAccepted)
			checkTrace(t, got, []string{"y", "z"}, []string{"assistant:yz"},
				[]string{wire.EventTurnAccepted, wire.EventTurnCompleted})
			d.check(t)
		})
	}
}

// TestLiveOverflow: a follower that does not keep up drops the live records
// beyond its bound and reads them by direct get instead: none is lost or
// repeated.
func TestLiveOverflow(t *testing.T) {
	client.Tuning(t, 2, 0, nil)
	e := start(t)
	ctx := testContext(t)
	c := newClient(t, e)
	w := newWorker(ctx, t, e, "s1", "t1", wire.JSON)
	tr := caughtUp(ctx, t, c, w)

	var want []string
	for i := range 300 {
		want = append(want, fmt.Sprint(i))
	}
	w.chunks(want...)
	w.append(wire.RoleAssistant, "counted")
	w.terminal(wire.EventTurnCompleted)

	got := collect(ctx, t, tr)
	got.prepend("event:" + wire.EventTurnAccepted)
	checkTrace(t, got, want, []string{"assistant:counted"},
		[]string{wire.EventTurnAccepted, wire.EventTurnCompleted})
}

// TestResumeMidTurn: a follower that stopped mid-turn resumes after its
// Position (or after the stream sequences of the updates it showed) and
// gets every later record once, and nothing it had.
func TestResumeMidTurn(t *testing.T) {
	positions := []struct {
		name string
		pos  func(tr *client.Turn, shown []client.Update) client.Position
	}{
		{"Turn.Position", func(tr *client.Turn, _ []client.Update) client.Position { return tr.Position() }},
		{"stream sequences shown", func(_ *client.Turn, shown []client.Update) client.Position {
			var p client.Position
			for _, u := range shown {
				switch {
				case u.Chunk != nil:
					p.Chunks = u.StreamSeq
				case u.Message != nil:
					p.Messages = u.StreamSeq
				case u.Event != nil:
					p.Events = u.StreamSeq
				}
			}
			return p
		}},
	}
	type test struct {
		name  string
		shown int // updates the first follower shows
		pos   func(tr *client.Turn, shown []client.Update) client.Position
	}
	var tests []test
	for _, p := range positions {
		for _, n := range []int{2, 4} {
			tests = append(tests, test{fmt.Sprintf("%s after %d", p.name, n), n, p.pos})
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t)
			ctx := testContext(t)
			c := newClient(t, e)
			w := newWorker(ctx, t, e, "s1", "t1", wire.JSON)
			other := newWorker(ctx, t, e, "s1", "t0", wire.JSON)
			other.append(wire.RoleUser, "earlier turn")
			other.terminal(wire.EventTurnCompleted)
			w.event(wire.EventTurnAccepted)
			w.message(wire.RoleUser, "go")
			w.chunks("a", "b", "c")

			// A first follower shows some updates, then goes away.
			first, err := c.Follow(ctx, "s1", "t1")
			if err != nil {
				t.Fatalf("Follow() = %v; want nil", err)
			}
			var shown []client.Update
			var labels []string
			for range tt.shown {
				u, err := first.Next(ctx)
				if err != nil {
					t.Fatalf("Next() = %v; want an update", err)
				}
				shown = append(shown, u)
				labels = append(labels, label(u))
			}
			pos := tt.pos(first, shown)
			first.Close()

			w.chunks("d", "e")
			w.event(wire.EventLLMFinish)
			w.message(wire.RoleAssistant, "abcde")
			w.terminal(wire.EventTurnCompleted)

			tr, err := c.Resume(ctx, "s1", "t1", pos)
			if err != nil {
				t.Fatalf("Resume(%+v) = %v; want nil", pos, err)
			}
			closeTurn(t, tr)
			got := collect(ctx, t, tr)
			for kind, after := range []uint64{pos.Chunks, pos.Messages, pos.Events} {
				for _, seq := range got.seqs[kind] {
					if seq <= after {
						t.Errorf("Resume(%+v) delivered stream seq %d of kind %d; want only records after %d", pos, seq, kind, after)
					}
				}
			}
			got.prepend(labels...)
			checkTrace(t, got,
				[]string{"a", "b", "c", "d", "e"},
				[]string{"user:go", "assistant:abcde"},
				[]string{wire.EventTurnAccepted, wire.EventLLMFinish, wire.EventTurnCompleted})
		})
	}
}

// TestRefusedRecordNeverDelivered: writes the streams refuse (an expected
// last subject sequence that does not match, as a fenced worker's are) are
// not stored, so no follower sees them, live or catching up.
func TestRefusedRecordNeverDelivered(t *testing.T) {
	for _, live := range []bool{true, false} {
		t.Run(fmt.Sprintf("live=%v", live), func(t *testing.T) {
			e := start(t)
			ctx := testContext(t)
			c := newClient(t, e)
			w := newWorker(ctx, t, e, "s1", "t1", wire.JSON)
			var tr *client.Turn
			if live {
				tr = caughtUp(ctx, t, c, w)
			} else {
				w.event(wire.EventTurnAccepted)
			}

			subj := wire.Subjects{}
			refuse := func(subject string, v any) {
				t.Helper()
				data, err := wire.JSON.Marshal(v)
				if err != nil {
					t.Fatalf("Marshal() = %v; want nil", err)
				}
				m := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{wire.HeaderContentType: {wire.ContentTypeJSON}}}
				if _, err := e.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(1<<40)); err == nil {
					t.Fatalf("PublishMsg(%s, wrong expected last subject sequence) = nil; want refused", subject)
				}
			}
			w.chunks("a")
			refuse(subj.Chunk("s1", "t1"), &wire.Chunk{SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 1, Seq: 99, Delta: &wire.Delta{Text: "refused"}})
			w.chunks("b")
			w.append(wire.RoleUser, "kept")
			// A writer positioned before the append is fenced.
			stale := e.bus.Turn("s1", "t1", wire.JSON, nil)
			err := stale.Append(ctx, &wire.Message{SessionID: "s1", TurnID: "t1", Role: wire.RoleAssistant, Content: "refused"})
			if !errors.Is(err, bus.ErrFenced) {
				t.Fatalf("stale Append() = %v; want bus.ErrFenced", err)
			}
			refuse(subj.Event("s1"), w.newEvent(wire.EventTurnFailed))
			w.terminal(wire.EventTurnCompleted)

			if !live {
				var err error
				if tr, err = c.Follow(ctx, "s1", "t1"); err != nil {
					t.Fatalf("Follow() = %v; want nil", err)
				}
				closeTurn(t, tr)
			}
			got := collect(ctx, t, tr)
			if live {
				got.prepend("event:" + wire.EventTurnAccepted)
			}
			checkTrace(t, got, []string{"a", "b"}, []string{"user:kept"},
				[]string{wire.EventTurnAccepted, wire.EventTurnCompleted})
		})
	}
}

// TestFollowWithPrefix: the live subjects follow a dotted prefix.
func TestFollowWithPrefix(t *testing.T) {
	srv := natstest.Start(t)
	nc, js := srv.JetStream()
	ctx := testContext(t)
	subjects := wire.Subjects{Prefix: "acme.turn"}
	if err := (bus.Topology{Subjects: subjects}).Ensure(ctx, js); err != nil {
		t.Fatalf("Ensure() = %v; want nil", err)
	}
	b, err := bus.New(ctx, js, subjects)
	if err != nil {
		t.Fatalf("bus.New() = %v; want nil", err)
	}
	c, err := client.New(nc, client.WithPrefix("acme.turn"))
	if err != nil {
		t.Fatalf("New() = %v; want nil", err)
	}
	w := newWorker(ctx, t, &env{srv: srv, nc: nc, js: js, bus: b}, "s1", "t1", wire.JSON)
	tr := caughtUp(ctx, t, c, w)
	w.chunks("a")
	w.append(wire.RoleAssistant, "a")
	w.terminal(wire.EventTurnCompleted)
	got := collect(ctx, t, tr)
	got.prepend("event:" + wire.EventTurnAccepted)
	checkTrace(t, got, []string{"a"}, []string{"assistant:a"},
		[]string{wire.EventTurnAccepted, wire.EventTurnCompleted})
}

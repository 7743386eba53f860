package bus_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/pkg/wire"
)

// ackEnv is an embedded server with the topology, and a direct
// JetStream context to set it up and read it back.
func ackEnv(t *testing.T) (*natstest.Server, jetstream.JetStream, context.Context) {
	t.Helper()
	srv := natstest.Start(t)
	_, direct := srv.JetStream()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	if err := (bus.Topology{}).Ensure(ctx, direct); err != nil {
		t.Fatal(err)
	}
	return srv, direct, ctx
}

// openBus opens a bus on a connection to url (a link's, or the server's).
func openBus(t *testing.T, ctx context.Context, url string, opts ...nats.Option) (*nats.Conn, *bus.Bus) {
	t.Helper()
	nc, err := nats.Connect(url, append([]nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(20 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bus.New(ctx, js, wire.Subjects{})
	if err != nil {
		t.Fatal(err)
	}
	return nc, b
}

// limitPerSubject makes stream refuse a subject's record past the first
// n (max messages per subject, discard new per subject).
func limitPerSubject(t *testing.T, ctx context.Context, js jetstream.JetStream, stream string, n int64) {
	t.Helper()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.MaxMsgsPerSubject, cfg.Discard, cfg.DiscardNewPerSubject = n, jetstream.DiscardNew, true
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatalf("UpdateStream(%s) = %v", stream, err)
	}
}

func chunk(seq int) *wire.Chunk {
	return &wire.Chunk{SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 1, Seq: seq, Delta: &wire.Delta{Text: "x"}}
}

func rawFrame(seq int) *wire.RawFrame {
	return &wire.RawFrame{SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 1, Seq: seq, Bytes: []byte(`{"x":1}`)}
}

func event() *wire.SessionEvent {
	return &wire.SessionEvent{Type: wire.EventLLMFinish, SessionID: "s1", TurnID: "t1", Time: time.Now()}
}

// TestFlushWaitsForEveryAck: over a link that delivers every ack late,
// Flush returns only once each chunk, raw frame and event was
// acknowledged: the connection has nothing outstanding after it, and
// every record is stored.
func TestFlushWaitsForEveryAck(t *testing.T) {
	srv, direct, ctx := ackEnv(t)
	_, b := openBus(t, ctx, natstest.SlowLink(t, srv.URL(), 50*time.Millisecond))
	w := b.Turn("s1", "t1", wire.JSON, nil)
	const n = 20
	for i := 1; i <= n; i++ {
		if err := w.Raw(rawFrame(i)); err != nil {
			t.Fatalf("Raw(%d) = %v", i, err)
		}
		if err := w.Chunk(chunk(i)); err != nil {
			t.Fatalf("Chunk(%d) = %v", i, err)
		}
		if err := w.Event(event()); err != nil {
			t.Fatalf("Event(%d) = %v", i, err)
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatalf("Flush() = %v", err)
	}
	if got := bus.Outstanding(b); got != 0 {
		t.Errorf("publishes awaiting their ack after Flush = %d; want 0", got)
	}
	subjects := wire.Subjects{}
	for _, c := range []struct{ stream, subject string }{
		{wire.StreamChunks, subjects.Chunk("s1", "t1")}, {wire.StreamRaw, subjects.Raw("s1", "t1")}, {wire.StreamEvents, subjects.Event("s1")},
	} {
		if got := count(t, direct, c.stream, c.subject); got != n {
			t.Errorf("%s holds %d records; want %d", c.subject, got, n)
		}
	}
}

// TestFlushKeepsTheRefusal: a record the server refuses fails the Flush
// with the server's error (a *jetstream.APIError, not a fence), and every
// later Flush and the Terminal too: the turn's records have a hole, so
// the writer never ends the turn.
func TestFlushKeepsTheRefusal(t *testing.T) {
	srv, direct, ctx := ackEnv(t)
	limitPerSubject(t, ctx, direct, wire.StreamRaw, 2)
	_, b := openBus(t, ctx, srv.URL())
	w := b.Turn("s1", "t1", wire.JSON, nil)
	for i := 1; i <= 3; i++ {
		if err := w.Raw(rawFrame(i)); err != nil {
			t.Fatalf("Raw(%d) = %v", i, err)
		}
	}
	var apiErr *jetstream.APIError
	for i := range 2 {
		if err := w.Flush(ctx); !errors.As(err, &apiErr) || errors.Is(err, bus.ErrFenced) {
			t.Fatalf("Flush() #%d after a refused frame = %v; want the server's refusal", i+1, err)
		}
	}
	end := &wire.SessionEvent{Type: wire.EventTurnCompleted, SessionID: "s1", TurnID: "t1", Time: time.Now()}
	if err := w.Terminal(ctx, end); !errors.As(err, &apiErr) {
		t.Errorf("Terminal() after a refused frame = %v; want the refusal", err)
	}
	if got := count(t, direct, wire.StreamEvents, wire.Subjects{}.Event("s1")); got != 0 {
		t.Errorf("events stored = %d; want no terminal event", got)
	}
}

// TestFlushPastItsContextKeepsFailures: a Flush whose context ends
// before the acks come forgets none of them: the next Flush waits for the
// same acks and reports the refusal among them. (A Flush used to drop
// the futures it had not reached, and a turn whose step was cancelled
// mid-flush then ended over a refused record.)
func TestFlushPastItsContextKeepsFailures(t *testing.T) {
	srv, direct, ctx := ackEnv(t)
	limitPerSubject(t, ctx, direct, wire.StreamRaw, 1)
	link := natstest.NewLink(t, srv.URL())
	_, b := openBus(t, ctx, link.URL())
	w := b.Turn("s1", "t1", wire.JSON, nil)
	link.Hold()
	for i := 1; i <= 2; i++ {
		if err := w.Raw(rawFrame(i)); err != nil {
			t.Fatalf("Raw(%d) = %v", i, err)
		}
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if err := w.Flush(ended); !errors.Is(err, context.Canceled) {
		t.Fatalf("Flush(ended context) with the acks held back = %v; want context.Canceled", err)
	}
	link.Release()
	var apiErr *jetstream.APIError
	if err := w.Flush(ctx); !errors.As(err, &apiErr) {
		t.Errorf("Flush() once the acks came = %v; want the second frame's refusal", err)
	}
}

// TestAckTimeoutFailsThroughTheSweeper: acks that never come (the link
// holds back everything the server sends) fail their publishes after the
// ack timeout, through the sweeper: a full window's waiting publish gets
// its room when the first one expires, and Flush reports the timeout.
func TestAckTimeoutFailsThroughTheSweeper(t *testing.T) {
	srv, _, ctx := ackEnv(t)
	link := natstest.NewLink(t, srv.URL())
	_, b := openBus(t, ctx, link.URL())
	if err := b.TrackAcks(bus.AckOptions{Window: 1, Timeout: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	w := b.Turn("s1", "t1", wire.JSON, nil)
	link.Hold()
	for i := 1; i <= 2; i++ { // the second waits for the first to expire
		if err := w.Chunk(chunk(i)); err != nil {
			t.Fatalf("Chunk(%d) = %v; want it to wait for room", i, err)
		}
	}
	if err := w.Flush(ctx); !errors.Is(err, jetstream.ErrAsyncPublishTimeout) {
		t.Errorf("Flush() with no ack coming = %v; want jetstream.ErrAsyncPublishTimeout", err)
	}
	if got := bus.Outstanding(b); got != 0 {
		t.Errorf("publishes awaiting their ack after they timed out = %d; want 0", got)
	}
}

// TestReconnectFailsOutstanding: the acks of publishes sent before a
// connection broke never come; the reconnect fails them at once (the
// count does not hang), and the reconnected connection's publishes are
// counted afresh.
func TestReconnectFailsOutstanding(t *testing.T) {
	srv, _, ctx := ackEnv(t)
	link := natstest.NewLink(t, srv.URL())
	nc, b := openBus(t, ctx, link.URL())
	w := b.Turn("s1", "t1", wire.JSON, nil)
	link.Hold()
	if err := w.Chunk(chunk(1)); err != nil {
		t.Fatal(err)
	}
	link.Cut()
	if err := w.Flush(ctx); !errors.Is(err, nats.ErrDisconnected) {
		t.Errorf("Flush() across a reconnect = %v; want nats.ErrDisconnected", err)
	}
	natstest.WaitConnected(t, nc)
	next := b.Turn("s1", "t1", wire.JSON, nil)
	if err := next.Chunk(chunk(2)); err != nil {
		t.Fatal(err)
	}
	if err := next.Flush(ctx); err != nil {
		t.Errorf("Flush() after the reconnect = %v", err)
	}
	if got := bus.Outstanding(b); got != 0 {
		t.Errorf("publishes awaiting their ack = %d; want 0", got)
	}
}

// TestAcksOnTheConnectionsInbox: the acks come to the connection's own
// inbox prefix, so a worker allowed to subscribe only to _INBOX_worker.>
// gets them.
func TestAcksOnTheConnectionsInbox(t *testing.T) {
	srv := natstest.StartWithUsers(t,
		natstest.User("admin", "pa", nil, nil),
		natstest.User("worker", "pw", nil, []string{"_INBOX_worker.>"}))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	admin, err := jetstream.New(srv.ConnectAs("admin", "pa"))
	if err != nil {
		t.Fatal(err)
	}
	if err := (bus.Topology{}).Ensure(ctx, admin); err != nil {
		t.Fatal(err)
	}
	_, b := openBus(t, ctx, srv.URLAs("worker", "pw"), nats.CustomInboxPrefix("_INBOX_worker"))
	// A subscription the server refused would get no ack: fail fast.
	if err := b.TrackAcks(bus.AckOptions{Timeout: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	w := b.Turn("s1", "t1", wire.JSON, nil)
	for i := 1; i <= 3; i++ {
		if err := w.Chunk(chunk(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Errorf("Flush() as a user confined to its inbox = %v", err)
	}
}

// TestTrackerEndsWithItsConnection: a connection's ack tracker (its
// sweeper and subscription) ends when the connection closes; its writers'
// publishes then fail, and so do their Flushes.
func TestTrackerEndsWithItsConnection(t *testing.T) {
	srv, _, ctx := ackEnv(t)
	nc, b := openBus(t, ctx, srv.URL())
	w := b.Turn("s1", "t1", wire.JSON, nil)
	if bus.AcksEnded(b) {
		t.Fatal("the ack tracker ended with its connection open")
	}
	nc.Close()
	for deadline := time.Now().Add(30 * time.Second); !bus.AcksEnded(b); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the ack tracker outlived its connection")
		}
	}
	if err := w.Chunk(chunk(1)); !errors.Is(err, nats.ErrConnectionClosed) {
		t.Errorf("Chunk() on a closed connection = %v; want nats.ErrConnectionClosed", err)
	}
	if err := w.Flush(ctx); !errors.Is(err, nats.ErrConnectionClosed) {
		t.Errorf("Flush() after a publish failed = %v; want nats.ErrConnectionClosed", err)
	}
}

// TestAckedSeesEachStoredRecord: AckOptions.Acked is given the lag of
// every record the stream stored, and of none it refused.
func TestAckedSeesEachStoredRecord(t *testing.T) {
	srv, direct, ctx := ackEnv(t)
	limitPerSubject(t, ctx, direct, wire.StreamRaw, 2)
	_, b := openBus(t, ctx, srv.URL())
	var acked, negative atomic.Int64
	if err := b.TrackAcks(bus.AckOptions{Acked: func(lag time.Duration) {
		acked.Add(1)
		if lag < 0 {
			negative.Add(1)
		}
	}}); err != nil {
		t.Fatal(err)
	}
	w := b.Turn("s1", "t1", wire.JSON, nil)
	for i := 1; i <= 3; i++ {
		if err := w.Raw(rawFrame(i)); err != nil {
			t.Fatalf("Raw(%d) = %v", i, err)
		}
	}
	if err := w.Flush(ctx); err == nil {
		t.Fatal("Flush() = nil; want the refusal of the third frame")
	}
	// Acked runs after the ack settled its publish: Flush may return
	// first.
	for acked.Load() < 2 && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	if got := acked.Load(); got != 2 {
		t.Errorf("Acked calls = %d; want 2 (the stored frames, not the refused one)", got)
	}
	if negative.Load() != 0 {
		t.Errorf("Acked was given a negative lag %d times", negative.Load())
	}
}

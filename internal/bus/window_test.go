package bus_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestFullWindowWaitsForRoom: when the window of unacknowledged publishes
// is full and acks are slow to come back, a turn's chunks and events wait
// for room instead of failing: every record is stored and Flush reports
// nothing. (With nats.go's default stall wait, 200 ms, the second publish
// behind a 300 ms ack failed, and the turn lost its records.) The window
// is the connection's ack tracker's (bus.AckOptions.Window).
func TestFullWindowWaitsForRoom(t *testing.T) {
	srv := natstest.Start(t)
	_, direct := srv.JetStream()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := (bus.Topology{}).Ensure(ctx, direct); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(natstest.SlowLink(t, srv.URL(), 300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bus.New(ctx, js, wire.Subjects{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.TrackAcks(bus.AckOptions{Window: 2}); err != nil {
		t.Fatal(err)
	}
	w := b.Turn("win", "t1", wire.JSON, nil)
	const n = 8
	for i := 1; i <= n; i++ {
		if err := w.Chunk(&wire.Chunk{SessionID: "win", TurnID: "t1", Step: 1, Attempt: 1, Seq: i, Delta: &wire.Delta{Text: "x"}}); err != nil {
			t.Fatalf("Chunk(%d) = %v", i, err)
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatalf("Flush() = %v; want every chunk stored", err)
	}
	s, err := direct.Stream(ctx, wire.StreamChunks)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.CachedInfo().State.Msgs; got != n {
		t.Errorf("TURN_CHUNKS holds %d chunks; want %d", got, n)
	}
}

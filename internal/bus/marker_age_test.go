package bus_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestReleasedTakeAfterChunkMarkerAged: once the chunk marker aged out of
// TURN_CHUNKS (max age), a take after a release writes new markers instead
// of keeping the released holder's, and its chunks are stored.
func TestReleasedTakeAfterChunkMarkerAged(t *testing.T) {
	srv := natstest.Start(t)
	_, js := srv.JetStream()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := (bus.Topology{ChunkMaxAge: time.Second}).Ensure(ctx, js); err != nil {
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
	appendTurn(t, b, st, "aged", "t1", 1, 1) // writes markers, releases

	// Wait (a condition, not a duration assertion) until the chunk
	// marker aged out of TURN_CHUNKS.
	chunks, err := js.Stream(ctx, wire.StreamChunks)
	if err != nil {
		t.Fatal(err)
	}
	fence := bus.FenceSubject(wire.Subjects{}, "chunk", "aged")
	for {
		_, err := chunks.GetLastMsgForSubject(ctx, fence)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("chunk marker never aged out")
		}
		time.Sleep(100 * time.Millisecond)
	}

	s, err := b.ReadSession(ctx, "aged")
	if err != nil {
		t.Fatal(err)
	}
	l, view, err := b.Take(ctx, st, s, "t2", 2, "w", nil)
	if err != nil {
		t.Fatalf("Take(t2) = %v", err)
	}
	w := l.Turn(wire.JSON, view.Log)
	if err := w.Chunk(&wire.Chunk{SessionID: "aged", TurnID: "t2", Step: 1, Attempt: 1, Seq: 1, Delta: &wire.Delta{Text: "x"}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(ctx); err != nil {
		held, _ := l.Held(ctx)
		t.Fatalf("the holder's first chunk: Flush() = %v (lease held: %v); want stored", err, held)
	}
}

package worker_test

import (
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/pkg/wire"

	"github.com/nats-io/nats.go/jetstream"
)

// TestTurnAfterChunkMarkerAgedOut: a take after a release keeps the
// released holder's fence markers only while they are still stored;
// TURN_CHUNKS keeps records (markers too) for ChunkMaxAge, and a kept
// marker that aged out would have the next turn's chunks refused although
// its lease is held (its provider call wasted, the turn run again). Here
// the age-out is stood in for by removing the marker from the stream as
// MaxAge does (a purge of its subject): the turn runs once.
func TestTurnAfterChunkMarkerAgedOut(t *testing.T) {
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{}))
	e.startWorker()
	ctx := ctxFor(t)
	submit := func(turn string) {
		body := `{"session_id":"aged","turn_id":"` + turn + `","input":[{"role":"user","content":"hello"}]}`
		if _, err := e.js.Publish(ctx, "turn.submit.aged", []byte(body)); err != nil {
			t.Fatal(err)
		}
		if got := waitTerminal(t, e.js, "aged", turn); got.Type != wire.EventTurnCompleted {
			t.Fatalf("%s ended %s %v; want turn.completed", turn, got.Type, got.Payload)
		}
	}
	submit("t1")
	eventually(t, "t1's lease is released", func() bool {
		kv, err := e.js.KeyValue(ctx, bus.StateBucket)
		if err != nil {
			return false
		}
		en, err := kv.Get(ctx, bus.LeaseKey("aged"))
		return err == nil && strings.Contains(string(en.Value()), `"fences"`) // written by the release
	})
	chunks, err := e.js.Stream(ctx, wire.StreamChunks)
	if err != nil {
		t.Fatal(err)
	}
	if err := chunks.Purge(ctx, jetstream.WithPurgeSubject(bus.FenceSubject(wire.Subjects{}, "chunk", "aged"))); err != nil {
		t.Fatal(err)
	}
	before := len(e.mock.Requests())
	submit("t2")
	if n := len(e.mock.Requests()) - before; n != 1 {
		t.Errorf("t2 made %d provider calls; want 1 (its first delivery's chunks were refused as fenced)", n)
	}
	evs, _ := records[wire.SessionEvent](t, e.js, wire.StreamEvents, wire.Subjects{}.Event("aged"))
	accepted := 0
	for _, ev := range evs {
		if ev.TurnID == "t2" && ev.Type == wire.EventTurnAccepted {
			accepted++
		}
	}
	if accepted != 1 {
		t.Errorf("t2 accepted %d times; want once (one delivery)", accepted)
	}
}

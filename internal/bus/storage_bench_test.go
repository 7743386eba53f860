package bus_test

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/benchtest"
	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/pkg/wire"
)

// BenchmarkChunkStorage publishes one step's frames per op (as
// BenchmarkPublishTurn's writer does: Raw + Chunk per frame, one Flush)
// to streams with file storage and with memory storage, side by side on
// one embedded server each: what keeping TURN_CHUNKS (and TURN_RAW) on
// disk costs per chunk. loadtest/README.md ("TURN_CHUNKS storage") has the
// figures and the durability trade-off.
//
//	go test ./internal/bus -run '^$' -bench ChunkStorage -benchmem -count 5
func BenchmarkChunkStorage(b *testing.B) {
	frames := benchTurn(b)
	for _, storage := range []jetstream.StorageType{jetstream.FileStorage, jetstream.MemoryStorage} {
		b.Run(storage.String(), func(b *testing.B) {
			ctx, _, lease := benchLease(b, bus.Topology{Storage: storage})
			w := lease.Turn(wire.JSON, nil)
			seq := 0
			benchtest.LoopPerChunk(b, len(frames), func() {
				for _, f := range frames {
					seq++
					if err := w.Raw(&wire.RawFrame{SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 1, Seq: seq, Bytes: f.raw}); err != nil {
						b.Fatal(err)
					}
					if err := w.Chunk(&wire.Chunk{SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 1, Seq: seq, Delta: f.delta}); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Flush(ctx); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

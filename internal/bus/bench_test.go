package bus_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/benchtest"
	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/internal/provider/openaichat"
	"github.com/turnstream/turnstream/pkg/wire"
)

// benchFrame is one provider frame as the observer relays it: the data as
// it arrived and the delta the translator made of it.
type benchFrame struct {
	raw   []byte
	delta *wire.Delta
}

// benchTurn is a 70-frame Chat Completions text turn (role, 67 words,
// finish, usage), as mockllm streams it, and [DONE]: each frame's bytes
// and its delta from openaichat's translator.
func benchTurn(b *testing.B) []benchFrame {
	b.Helper()
	text := strings.Join(strings.Fields(strings.Repeat("Paris is the capital of France and its largest city, set on the Seine. ", 6))[:67], " ")
	t := openaichat.NewTranslator()
	var out []benchFrame
	for _, f := range mockllm.NewStream("mock-1").Text(text).Finish("stop").Usage(120, 67).Frames() {
		if err := t.Frame([]byte(f.Data)); err != nil {
			b.Fatal(err)
		}
		out = append(out, benchFrame{raw: []byte(f.Data), delta: t.Asm.TakeDelta()})
	}
	t.Done()
	return append(out, benchFrame{raw: []byte("[DONE]"), delta: t.Asm.TakeDelta()})
}

// benchLease starts an embedded server with topology t and takes the
// lease of turn t1 of session s1 on it.
func benchLease(b *testing.B, t bus.Topology) (context.Context, jetstream.JetStream, *bus.Lease) {
	b.Helper()
	srv := natstest.Start(b)
	_, js := srv.JetStream()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	b.Cleanup(cancel)
	if err := t.Ensure(ctx, js); err != nil {
		b.Fatal(err)
	}
	bs, err := bus.New(ctx, js, wire.Subjects{})
	if err != nil {
		b.Fatal(err)
	}
	st, err := bs.State(ctx)
	if err != nil {
		b.Fatal(err)
	}
	lease, err := bs.TakeLease(ctx, st, "s1", "t1", 1, "bench")
	if err != nil {
		b.Fatal(err)
	}
	return ctx, js, lease
}

// BenchmarkPublishTurn publishes one step's frames per op against an
// embedded JetStream server (file storage), each frame as its raw frame
// and its chunk, then waits for every ack:
//
//   - writer: a leased TurnWriter's Raw + Chunk per frame, one Flush, as
//     the turn's observer does;
//   - nats: the raw-NATS baseline, a bare js.PublishMsgAsync of the same
//     bytes (the frame's data; the chunk encoded once, up front) to the
//     same subjects, without headers, then PublishAsyncComplete.
//
// allocs/chunk and B/chunk divide by the frames (two records each). The
// server runs in this process, so its allocations count too, in both.
func BenchmarkPublishTurn(b *testing.B) {
	frames := benchTurn(b)
	ctx, js, lease := benchLease(b, bus.Topology{})
	for _, codec := range []wire.Codec{wire.JSON, wire.Msgpack} {
		name := strings.TrimPrefix(codec.ContentType(), "application/")
		b.Run("writer/"+name, func(b *testing.B) {
			w := lease.Turn(codec, nil)
			step := 0
			benchtest.LoopPerChunk(b, len(frames), func() {
				step++
				for i, f := range frames {
					buf := bytes.Clone(f.raw) // the provider's read buffer
					if err := w.Raw(&wire.RawFrame{SessionID: "s1", TurnID: "t1", Step: step, Attempt: 1, Seq: i + 1,
						Provider: "openai", Model: "gpt-4o-mini", Bytes: buf}); err != nil {
						b.Fatal(err)
					}
					if err := w.Chunk(&wire.Chunk{SessionID: "s1", TurnID: "t1", Step: step, Attempt: 1, Seq: i + 1,
						Provider: "openai", Model: "gpt-4o-mini", Delta: f.delta}); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Flush(ctx); err != nil {
					b.Fatal(err)
				}
			})
		})
		b.Run("nats/"+name, func(b *testing.B) {
			subj := wire.Subjects{}
			chunks := make([][]byte, len(frames))
			for i, f := range frames {
				var err error
				if chunks[i], err = codec.Marshal(&wire.Chunk{SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 1, Seq: i + 1,
					Provider: "openai", Model: "gpt-4o-mini", Delta: f.delta}); err != nil {
					b.Fatal(err)
				}
			}
			rawSub, chunkSub := subj.Raw("s1", "t2"), subj.Chunk("s1", "t2")
			benchtest.LoopPerChunk(b, len(frames), func() {
				for i, f := range frames {
					if _, err := js.PublishMsgAsync(&nats.Msg{Subject: rawSub, Data: f.raw}); err != nil {
						b.Fatal(err)
					}
					if _, err := js.PublishMsgAsync(&nats.Msg{Subject: chunkSub, Data: chunks[i]}); err != nil {
						b.Fatal(err)
					}
				}
				select {
				case <-js.PublishAsyncComplete():
				case <-ctx.Done():
					b.Fatal(ctx.Err())
				}
			})
		})
	}
}

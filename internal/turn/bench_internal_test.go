package turn

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaichat"
	"github.com/turnstream/turnstream/internal/provider/providertest"
	"github.com/turnstream/turnstream/pkg/wire"
)

// BenchmarkStepFrames is the per-chunk path end to end, one step per op:
// a 70-frame Chat Completions text turn (mockllm's bytes, replayed from
// memory) through openaichat's Adapter.Stream, each frame relayed by the
// step's observer (stepObserver.Frame: its raw frame and its chunk) to a
// leased bus.TurnWriter on an embedded JetStream server, then one Flush.
// It leaves out the executor's retry loop and the loop's per-turn work
// (lease, session log, events, markers, the assistant message).
// allocs/chunk and B/chunk divide by the frames; the server runs in this
// process, so its allocations count too.
func BenchmarkStepFrames(b *testing.B) {
	text := strings.Join(strings.Fields(strings.Repeat("Paris is the capital of France and its largest city, set on the Seine. ", 6))[:67], " ")
	const reqBody = `{"model":"mock-1","messages":[{"role":"user","content":"hi"}],"stream":true}`
	rec := providertest.RecordMock(b, "/v1/chat/completions", reqBody,
		mockllm.NewStream("mock-1").Text(text).Finish("stop").Usage(120, 67).Response())
	a, err := openaichat.New(openaichat.Options{BaseURL: "http://mock.invalid/v1", APIKey: "sk-bench", HTTPClient: rec.Client()})
	if err != nil {
		b.Fatal(err)
	}
	srv := natstest.Start(b)
	_, js := srv.JetStream()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	b.Cleanup(cancel)
	if err := (bus.Topology{}).Ensure(ctx, js); err != nil {
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
	target := provider.Target{Provider: "openai", Model: "gpt-4o-mini"}
	req := &wire.TurnRequest{SessionID: "s1", TurnID: "t1"}
	for _, codec := range []wire.Codec{wire.JSON, wire.Msgpack} {
		b.Run(strings.TrimPrefix(codec.ContentType(), "application/"), func(b *testing.B) {
			w := lease.Turn(codec, nil)
			r := &run{loop: &Loop{}, req: req, w: w}
			step, frames := 0, 0
			op := func() {
				step++
				frames = 0
				obs := &stepObserver{r: r, step: step}
				if _, err := a.Stream(ctx, []byte(reqBody), func(f provider.Frame) error {
					frames++
					return obs.Frame(1, target, f)
				}); err != nil {
					b.Fatal(err)
				}
				if err := w.Flush(ctx); err != nil {
					b.Fatal(err)
				}
			}
			op()
			if frames != rec.Frames() {
				b.Fatalf("relayed %d frames; the body has %d", frames, rec.Frames())
			}
			b.ReportAllocs()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				op()
			}
			runtime.ReadMemStats(&after)
			n := float64(b.N) * float64(frames)
			b.ReportMetric(float64(frames), "chunks/op")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/chunk")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/chunk")
		})
	}
}

package openaiwire_test

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaiwire"
	"github.com/turnstream/turnstream/internal/provider/providertest"
)

// BenchmarkEvents measures SSE framing alone: Client.Post, then
// Response.Events (openai-go's decoder over the body wrapped by Terminate
// and BoundSSE, as every adapter reads it) to the end of a 70-frame Chat
// Completions text turn and its [DONE], the data left as it arrived.
func BenchmarkEvents(b *testing.B) {
	text := strings.Join(strings.Fields(strings.Repeat("Paris is the capital of France and its largest city. ", 8))[:67], " ")
	rec := providertest.RecordMock(b, "/v1/chat/completions", `{"model":"mock-1","messages":[],"stream":true}`,
		mockllm.NewStream("mock-1").Text(text).Finish("stop").Usage(120, 67).Response())
	c, err := openaiwire.New(openaiwire.Options{AdapterOptions: provider.AdapterOptions{BaseURL: "http://mock.invalid/v1", HTTPClient: rec.Client()}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	body := []byte(`{"model":"mock-1","messages":[],"stream":true}`)
	read := func() int {
		res, err := c.Post(ctx, "chat/completions", body)
		if err != nil {
			b.Fatal(err)
		}
		defer res.Close()
		n := 0
		for ev := res.Events(); ev.Next(); {
			if len(ev.Event().Data) == 0 {
				b.Fatal("empty event")
			}
			n++
		}
		return n
	}
	frames := read()
	if frames != rec.Frames() {
		b.Fatalf("Events() gave %d events; the body has %d", frames, rec.Frames())
	}
	b.SetBytes(int64(len(rec.Body)))
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		read()
	}
	runtime.ReadMemStats(&after)
	n := float64(b.N) * float64(frames)
	b.ReportMetric(float64(frames), "chunks/op")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/chunk")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/chunk")
}

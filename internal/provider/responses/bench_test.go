package responses

import (
	"context"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/benchtest"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/providertest"
)

// benchText is the text turn's answer: 64 words, so the stream is 70
// events (item and part added, a delta per word, text, part and item
// done, response.completed).
var benchText = strings.Join(strings.Fields(strings.Repeat(
	"Paris is the capital of France and its largest city, set on the Seine in the north of the country. ", 4))[:64], " ")

// BenchmarkStream measures one Responses answer through Adapter.Stream,
// the production path: openai-go's request and response handling, the
// bounded SSE decoder over the body, Translator.Event and the assembler,
// each event handed to the sink with its bytes as they arrived.
// allocs/chunk and B/chunk divide by the events the sink got.
func BenchmarkStream(b *testing.B) {
	const req = `{"model":"mock-1","input":"hi","stream":true}`
	turns := []struct {
		name string
		rec  providertest.Recorded
	}{
		{"text", providertest.RecordMock(b, "/v1/responses", req,
			mockllm.NewResponsesStream("mock-1").Text(benchText).Usage(120, 0, 64, 0).Completed().Response())},
		{"function_calls", providertest.RecordMock(b, "/v1/responses", req,
			mockllm.NewResponsesStream("mock-1").FunctionCalls(7,
				mockllm.Call{ID: "call_mock0000000000000000001", Name: "get_weather", Arguments: `{"city":"Paris","units":"metric","days":3}`},
				mockllm.Call{ID: "call_mock0000000000000000002", Name: "search_places", Arguments: `{"query":"museums open on Monday near the Louvre","limit":5}`},
			).Usage(140, 0, 40, 0).Completed().Response())},
	}
	for _, tt := range turns {
		b.Run(tt.name, func(b *testing.B) {
			a, err := New(Options{BaseURL: "http://mock.invalid/v1", APIKey: "sk-bench", HTTPClient: tt.rec.Client()})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			frames := 0
			sink := func(provider.Frame) error { frames++; return nil }
			if _, err := a.Stream(ctx, []byte(req), sink); err != nil {
				b.Fatalf("Stream() = %v", err)
			}
			if frames != tt.rec.Frames() {
				b.Fatalf("Stream() relayed %d frames; the body has %d", frames, tt.rec.Frames())
			}
			b.SetBytes(int64(len(tt.rec.Body)))
			benchtest.LoopPerChunk(b, frames, func() {
				if _, err := a.Stream(ctx, []byte(req), sink); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

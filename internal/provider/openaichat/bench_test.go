package openaichat

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/benchtest"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/providertest"
)

// benchParagraph is the text of the benchmark's text turn, streamed one word
// per chunk as mockllm does.
const benchParagraph = "Paris is the capital of France and its largest city, set on the Seine " +
	"in the north of the country. It has been a centre of finance, diplomacy, commerce, " +
	"fashion and science for centuries, and its museums, among them the Louvre and the " +
	"Musee d'Orsay, draw millions of visitors every year. The city is divided into twenty " +
	"arrondissements, spiralling out from the first, and its metro, opened in 1900, carries " +
	"more than four million riders on a typical weekday, which makes it one of the busiest."

// benchWords is the first n words of benchParagraph.
func benchWords(tb testing.TB, n int) string {
	tb.Helper()
	w := strings.Fields(benchParagraph)
	if n > len(w) {
		tb.Fatalf("benchWords(%d): the paragraph has %d words", n, len(w))
	}
	return strings.Join(w[:n], " ")
}

// chatTurns are the benchmark's Chat Completions answers: a 70-frame text
// turn (role, 67 words, finish, usage) and a turn with two parallel tool
// calls whose arguments arrive 7 bytes at a time, as mockllm's default
// script sends them.
func chatTurns(tb testing.TB) []struct {
	name string
	rec  providertest.Recorded
} {
	tb.Helper()
	const req = `{"model":"mock-1","messages":[{"role":"user","content":"hi"}],"stream":true}`
	text := mockllm.NewStream("mock-1").Text(benchWords(tb, 67)).Finish("stop").Usage(120, 67).Response()
	tools := mockllm.NewStream("mock-1").Text("Let me check. ").ToolCalls(7,
		mockllm.Call{ID: "call_mock0000000000000000001", Name: "get_weather", Arguments: `{"city":"Paris","units":"metric","days":3}`},
		mockllm.Call{ID: "call_mock0000000000000000002", Name: "search_places", Arguments: `{"query":"museums open on Monday near the Louvre","limit":5}`},
	).Finish("tool_calls").Usage(140, 40).Response()
	return []struct {
		name string
		rec  providertest.Recorded
	}{
		{"text", providertest.RecordMock(tb, "/v1/chat/completions", req, text)},
		{"tool_calls", providertest.RecordMock(tb, "/v1/chat/completions", req, tools)},
	}
}

// BenchmarkStream measures one Chat Completions answer through
// Adapter.Stream, the production path: openai-go's request and response
// handling, the bounded SSE decoder over the body, Translator.Frame and
// the assembler, each frame handed to the sink with its bytes as they
// arrived. allocs/chunk and B/chunk divide by the frames the sink got.
func BenchmarkStream(b *testing.B) {
	for _, tt := range chatTurns(b) {
		b.Run(tt.name, func(b *testing.B) {
			a, err := New(Options{BaseURL: "http://mock.invalid/v1", APIKey: "sk-bench", HTTPClient: tt.rec.Client()})
			if err != nil {
				b.Fatal(err)
			}
			body := []byte(`{"model":"mock-1","messages":[{"role":"user","content":"hi"}],"stream":true}`)
			ctx := context.Background()
			var frames, raw int
			sink := func(f provider.Frame) error {
				frames++
				raw += len(f.Raw)
				return nil
			}
			if _, err := a.Stream(ctx, body, sink); err != nil {
				b.Fatalf("Stream() = %v", err)
			}
			if frames != tt.rec.Frames() {
				b.Fatalf("Stream() relayed %d frames; the body has %d", frames, tt.rec.Frames())
			}
			b.SetBytes(int64(len(tt.rec.Body)))
			benchtest.LoopPerChunk(b, frames, func() {
				if _, err := a.Stream(ctx, body, sink); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkTranslate measures Translator.Frame and TakeDelta alone over the
// same frames' data, already split: the decode and assembly share of
// BenchmarkStream, without HTTP and SSE framing.
func BenchmarkTranslate(b *testing.B) {
	for _, tt := range chatTurns(b) {
		b.Run(tt.name, func(b *testing.B) {
			var datas [][]byte
			for _, line := range bytes.Split(tt.rec.Body, []byte("\n")) {
				if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok && !bytes.Equal(d, []byte("[DONE]")) {
					datas = append(datas, d)
				}
			}
			benchtest.LoopPerChunk(b, len(datas), func() {
				t := NewTranslator()
				for _, d := range datas {
					if err := t.Frame(d); err != nil {
						b.Fatal(err)
					}
					t.Asm.TakeDelta()
				}
				t.Done()
				if t.Asm.Response() == nil {
					b.Fatal("no response")
				}
			})
		})
	}
}

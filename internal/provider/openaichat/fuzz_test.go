package openaichat

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/providertest"
)

// dataPayloads returns the data of every "data: " line of the fixtures.
func dataPayloads(t testing.TB) [][]byte {
	t.Helper()
	var out [][]byte
	for _, body := range fixtureFiles(t) {
		out = append(out, providertest.DataLines(body)...)
	}
	return out
}

// FuzzTranslator feeds arbitrary data frames (one per line of the input)
// into a Translator, then Done. It must never panic, and whatever it
// assembles must keep the completion contract and agree with its deltas.
func FuzzTranslator(f *testing.F) {
	for _, p := range dataPayloads(f) {
		f.Add(p)
	}
	for _, body := range fixtureFiles(f) {
		var frames [][]byte
		for _, p := range providertest.DataLines(body) {
			if !bytes.Equal(p, []byte("[DONE]")) {
				frames = append(frames, p)
			}
		}
		f.Add(bytes.Join(frames, []byte("\n")))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr := NewTranslator()
		var text strings.Builder
		for _, frame := range bytes.Split(data, []byte("\n")) {
			err := tr.Frame(frame)
			if err != nil && provider.AsFailure(err) == nil {
				t.Fatalf("Frame(%q) error %v is not a failure", frame, err)
			}
			if d := tr.Asm.TakeDelta(); d != nil {
				text.WriteString(d.Text)
			}
		}
		tr.Done()
		if d := tr.Asm.TakeDelta(); d != nil {
			text.WriteString(d.Text)
		}
		checkAssembled(t, tr, text.String())
	})
}

// FuzzBody feeds arbitrary bytes to Translator.Body: no panic, a failure
// or a terminal response that agrees with its delta.
func FuzzBody(f *testing.F) {
	f.Add([]byte(`{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't."},"finish_reason":"stop"}]}`))
	f.Add([]byte(`{"choices":[{"index":0,"message":{"content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"function":{"name":"f","arguments":{"x":1}}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}`))
	f.Add([]byte(`{"choices":[{"index":0,"message":{"reasoning_content":"r","content":"<think>t</think>x"},"finish_reason":"length"}]}`))
	f.Add([]byte(`{"error":{"code":429,"message":"try again in 2s"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr := NewTranslator()
		if err := tr.Body(data); err != nil {
			if provider.AsFailure(err) == nil {
				t.Fatalf("Body() error %v is not a failure", err)
			}
			return
		}
		var text string
		if d := tr.Asm.TakeDelta(); d != nil {
			text = d.Text
		}
		checkAssembled(t, tr, text)
	})
}

// checkAssembled: tr reached the terminal, its delta text is the response
// text, and a complete call is named with one JSON value as arguments.
func checkAssembled(t *testing.T, tr *Translator, deltaText string) {
	t.Helper()
	r := tr.Asm.Response()
	if !r.Terminal {
		t.Fatalf("Response().Terminal = false after Done")
	}
	if deltaText != r.Text {
		t.Fatalf("delta text %q != response text %q", deltaText, r.Text)
	}
	for _, c := range r.ToolCalls {
		if c.Complete && (c.Name == "" || !json.Valid([]byte(c.Arguments))) {
			t.Fatalf("complete call %+v has no name or invalid arguments", c)
		}
		if c.Arguments == "" {
			t.Fatalf("call %+v has empty arguments; want {}", c)
		}
	}
}

// FuzzAdapterStream sends arbitrary bytes as an SSE body through the real
// adapter over HTTP. It must never panic; a success, and in particular a
// tool call marked complete, requires that the stream held [DONE].
func FuzzAdapterStream(f *testing.F) {
	for _, body := range fixtureFiles(f) {
		f.Add(body)
	}
	f.Add([]byte("data: [DONE]"))
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\r\n\r\ndata: [DONE]\r\n"))
	f.Add([]byte("event: error\ndata: {}\n\n"))
	f.Add([]byte(": c\n\ndata:\n\ndata: [DONE]\n\n"))

	// The server streams back whatever the adapter sends as its request body.
	srv := providertest.Start(f, providertest.Echo())
	a := newAdapter(f, srv.URL+"/v1", Options{IdleTimeout: 10 * time.Second})
	f.Fuzz(func(t *testing.T, body []byte) {
		// Stream fails t unless it returns exactly one of a response and a
		// classified failure.
		o := providertest.Stream(t, a, body)
		hasDone := bytes.Contains(body, []byte("[DONE]"))
		if o.Err != nil {
			return
		}
		if !hasDone {
			t.Fatalf("Stream() succeeded without [DONE] in %q", body)
		}
		for _, c := range o.Resp.ToolCalls {
			if c.Complete && !hasDone {
				t.Fatalf("tool call %+v complete without [DONE]", c)
			}
			if c.Complete && (c.Name == "" || !json.Valid([]byte(c.Arguments))) {
				t.Fatalf("complete call %+v has no name or invalid arguments", c)
			}
		}
	})
}

// FuzzThinkSplitter: the split of content into text and reasoning does not
// depend on how the content is chunked, and no byte outside the tags and the
// newlines after </think> is lost.
func FuzzThinkSplitter(f *testing.F) {
	f.Add("<think>why</think>\n\nanswer", uint8(1))
	f.Add("  <think>a</thi</think>b", uint8(3))
	f.Add("plain <think> text", uint8(2))
	f.Add("<th", uint8(1))
	f.Fuzz(func(t *testing.T, in string, size uint8) {
		n := int(size%16) + 1
		wantText, wantReasoning := split([]string{in})
		var chunks []string
		for i := 0; i < len(in); i += n {
			chunks = append(chunks, in[i:min(i+n, len(in))])
		}
		text, reasoning := split(chunks)
		if text != wantText || reasoning != wantReasoning {
			t.Fatalf("split(%q in %d-byte chunks) = %q, %q; want %q, %q", in, n, text, reasoning, wantText, wantReasoning)
		}
		if len(text)+len(reasoning) > len(in) {
			t.Fatalf("split(%q) = %q, %q; longer than the input", in, text, reasoning)
		}
		if !strings.Contains(in, "<think>") && text != in {
			t.Fatalf("split(%q) = %q, %q; want the input as text", in, text, reasoning)
		}
	})
}

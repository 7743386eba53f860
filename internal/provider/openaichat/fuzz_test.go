package openaichat

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/provider"
)

// dataPayloads returns the data of every "data: " line of the fixtures.
func dataPayloads(t testing.TB) [][]byte {
	t.Helper()
	var out [][]byte
	for _, body := range fixtureFiles(t) {
		for _, line := range bytes.Split(body, []byte("\n")) {
			if p, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				out = append(out, p)
			}
		}
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
		for _, line := range bytes.Split(body, []byte("\n")) {
			if p, ok := bytes.CutPrefix(line, []byte("data: ")); ok && !bytes.Equal(p, []byte("[DONE]")) {
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
		r := tr.Asm.Response()
		if !r.Terminal {
			t.Fatalf("Response().Terminal = false after Done")
		}
		if text.String() != r.Text {
			t.Fatalf("delta text %q != response text %q", text.String(), r.Text)
		}
		for _, c := range r.ToolCalls {
			if c.Complete && (c.Name == "" || !json.Valid([]byte(c.Arguments))) {
				t.Fatalf("complete call %+v has no name or invalid arguments", c)
			}
			if c.Arguments == "" {
				t.Fatalf("call %+v has empty arguments; want {}", c)
			}
		}
	})
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
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.Write(body) //nolint:errcheck // the client may be gone
	}))
	defer srv.Close()
	a, err := New(Options{BaseURL: srv.URL + "/v1", APIKey: "k", IdleTimeout: 10 * time.Second})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		resp, err := a.Stream(ctx, body, func(provider.Frame) error { return nil })
		hasDone := bytes.Contains(body, []byte("[DONE]"))
		if err != nil {
			if f := provider.AsFailure(err); f == nil || f.Class == "" {
				t.Fatalf("Stream() error %v is not a classified failure", err)
			}
			if resp != nil {
				t.Fatalf("Stream() = %+v, %v; want no response with an error", resp, err)
			}
			return
		}
		if !hasDone {
			t.Fatalf("Stream() succeeded without [DONE] in %q", body)
		}
		for _, c := range resp.ToolCalls {
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

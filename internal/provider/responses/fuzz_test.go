package responses

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/providertest"
)

// completes reports whether b holds an event that can complete a response.
func completes(b []byte) bool {
	return bytes.Contains(b, []byte("response.completed")) || bytes.Contains(b, []byte("response.incomplete"))
}

// FuzzResponsesStream sends arbitrary bytes as an SSE body through the
// real adapter over HTTP. It must never panic; a success, and in
// particular a tool call marked complete, requires a response.completed or
// response.incomplete event in the stream.
func FuzzResponsesStream(f *testing.F) {
	for _, body := range fixtureFiles(f) {
		f.Add(body)
	}
	f.Add([]byte(okStream))
	f.Add([]byte("event: response.completed\ndata: {}"))
	f.Add([]byte("event: error\ndata: {}\n\n"))
	f.Add([]byte(": c\n\ndata:\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"type\":\"function_call\",\"name\":\"f\",\"arguments\":\"{}\"}}\r\n\r\ndata: {\"type\":\"response.completed\"}\r\n\r\n"))

	// The server streams back whatever the adapter sends as its request body.
	srv := providertest.Start(f, providertest.Echo())
	a := newAdapter(f, srv.URL+"/v1", Options{IdleTimeout: 10 * time.Second, Stream: true})
	f.Fuzz(func(t *testing.T, body []byte) {
		// Stream fails t unless it returns exactly one of a response and a
		// classified failure.
		o := providertest.Stream(t, a, body)
		if o.Err != nil {
			return
		}
		if !completes(body) {
			t.Fatalf("Stream() succeeded without a terminal event in %q", body)
		}
		checkResponse(t, o.Resp, o.DeltaText())
	})
}

// FuzzTranslator feeds arbitrary event payloads (one per line, with event
// names taken from a fixed set) to a Translator. It must never panic; the
// assembler may reach its terminal only through a completing event; what
// the deltas said is what the response says.
func FuzzTranslator(f *testing.F) {
	for _, body := range fixtureFiles(f) {
		var lines [][]byte
		for _, ev := range providertest.SplitSSE(body) {
			lines = append(lines, ev.Data)
		}
		f.Add(bytes.Join(lines, []byte("\n")))
	}
	names := []string{"", "error", "response.completed", "message"}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr := NewTranslator()
		var text strings.Builder
		for i, line := range bytes.Split(data, []byte("\n")) {
			reached := tr.Asm.Reached()
			err := tr.Event(names[i%len(names)], line)
			if err != nil && provider.AsFailure(err) == nil {
				t.Fatalf("Event(%q) error %v is not a failure", line, err)
			}
			if !reached && tr.Asm.Reached() && !completes(line) && names[i%len(names)] != "response.completed" {
				t.Fatalf("Event(%q) reached the terminal without a completing event", line)
			}
			if d := tr.Asm.TakeDelta(); d != nil {
				text.WriteString(d.Text)
			}
			if err != nil {
				break
			}
		}
		r := tr.Asm.Response()
		checkResponse(t, r, text.String())
	})
}

// FuzzBody feeds arbitrary bytes to Translator.Body: no panic, and success
// only with a terminal.
func FuzzBody(f *testing.F) {
	f.Add([]byte(`{"id":"r","status":"completed","output":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}]}`))
	f.Add([]byte(`{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"message","content":[{"type":"output_text","text":"x"}]}]}`))
	f.Add([]byte(`{"error":{"code":429,"message":"try again in 2s"}}`))
	f.Add([]byte(`{"status":"failed","error":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr := NewTranslator()
		err := tr.Body(data)
		if err != nil {
			if provider.AsFailure(err) == nil {
				t.Fatalf("Body() error %v is not a failure", err)
			}
			return
		}
		var text string
		if d := tr.Asm.TakeDelta(); d != nil {
			text = d.Text
		}
		r := tr.Asm.Response()
		if !r.Terminal {
			t.Fatalf("Body(%q) succeeded without reaching the terminal", data)
		}
		checkResponse(t, r, text)
	})
}

// checkResponse: the delta text is the response text; a complete call is
// named, has one JSON value as arguments, and comes from a terminal.
func checkResponse(t *testing.T, r *assemble.Response, deltaText string) {
	t.Helper()
	if r.Text != deltaText {
		t.Fatalf("delta text %q != response text %q", deltaText, r.Text)
	}
	for _, c := range r.ToolCalls {
		if c.Arguments == "" {
			t.Fatalf("call %+v has empty arguments; want {}", c)
		}
		if c.Complete && (!r.Terminal || c.Name == "" || !json.Valid([]byte(c.Arguments))) {
			t.Fatalf("complete call %+v without a terminal, a name or valid arguments", c)
		}
	}
}

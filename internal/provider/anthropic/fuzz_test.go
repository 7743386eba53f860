package anthropic

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/providertest"
)

// FuzzTranslator feeds arbitrary events into a Translator: an input is
// events separated by blank lines, each an event name, a newline and its
// data. It must never panic; whatever it assembles keeps the completion
// contract, its deltas agree with its text, and its echo is one Prepare
// takes back (or empty).
func FuzzTranslator(f *testing.F) {
	for _, body := range providertest.Fixtures(f, filepath.Join("testdata", "streams", "*.sse")) {
		var in [][]byte
		for _, ev := range providertest.SplitSSE(body) {
			in = append(in, append([]byte(ev.Name+"\n"), ev.Data...))
		}
		f.Add(bytes.Join(in, []byte("\n\n")))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr := NewTranslator()
		var text strings.Builder
		for _, ev := range bytes.Split(data, []byte("\n\n")) {
			name, payload, _ := bytes.Cut(ev, []byte("\n"))
			_, err := tr.Event(string(name), payload)
			if err != nil && provider.AsFailure(err) == nil {
				t.Fatalf("Event(%q) error %v is not a failure", ev, err)
			}
			if d := tr.TakeDelta(); d != nil {
				text.WriteString(d.Text)
			}
			if err != nil || tr.Reached() {
				break
			}
		}
		r := tr.Response()
		if text.String() != r.Text {
			t.Fatalf("delta text %q != response text %q", text.String(), r.Text)
		}
		for _, c := range r.ToolCalls {
			if c.Complete && (!r.Terminal || c.Name == "" || !json.Valid([]byte(c.Arguments))) {
				t.Fatalf("complete call %+v: terminal %v, no name or invalid arguments", c, r.Terminal)
			}
		}
		if r.Echo != "" {
			if _, ok := decodeEcho(r.Echo); !ok {
				t.Fatalf("echo %s is not one Prepare replays", r.Echo)
			}
		}
	})
}

package providertest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// Fixture reads the file at path, relative to the test's package
// directory.
func Fixture(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Fixtures reads every file matching pattern, keyed by base name. It fails
// t if none matches.
func Fixtures(t testing.TB, pattern string) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(pattern)
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures match %s: %v", pattern, err)
	}
	out := make(map[string][]byte, len(paths))
	for _, p := range paths {
		out[filepath.Base(p)] = Fixture(t, p)
	}
	return out
}

// Event is one event of an event-stream body.
type Event struct {
	Name string
	Data []byte
}

// SplitSSE splits an event-stream body into its events the way a client
// would: comments skipped, data lines joined by newlines, a last event
// without its blank line kept.
func SplitSSE(body []byte) []Event {
	var out []Event
	var cur Event
	var data [][]byte
	for _, line := range bytes.Split(body, []byte("\n")) {
		switch {
		case len(line) == 0:
			if data != nil {
				cur.Data = bytes.Join(data, []byte("\n"))
				out = append(out, cur)
			}
			cur, data = Event{}, nil
		case bytes.HasPrefix(line, []byte(":")):
		case bytes.HasPrefix(line, []byte("event:")):
			cur.Name = string(bytes.TrimSpace(line[len("event:"):]))
		case bytes.HasPrefix(line, []byte("data:")):
			data = append(data, bytes.TrimPrefix(line[len("data:"):], []byte(" ")))
		}
	}
	if data != nil {
		cur.Data = bytes.Join(data, []byte("\n"))
		out = append(out, cur)
	}
	return out
}

// DataLines returns what follows "data: " on every line of body that has
// it, in order.
func DataLines(body []byte) [][]byte {
	var out [][]byte
	for _, line := range bytes.Split(body, []byte("\n")) {
		if p, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			out = append(out, p)
		}
	}
	return out
}

// GoldenJSON compares body, a JSON request body, with the golden file at
// path: the body indented by two spaces and ended by a newline, so key
// order and presence are compared as sent. With update set it writes the
// file first.
func GoldenJSON(t testing.TB, path string, body []byte, update bool) {
	t.Helper()
	var got bytes.Buffer
	if err := json.Indent(&got, body, "", "  "); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, body)
	}
	got.WriteByte('\n')
	if update {
		if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden %s: %v (run with -update to create it)", path, err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("body =\n%s\nwant %s\n%s", got.Bytes(), path, want)
	}
}

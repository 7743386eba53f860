package responses

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/provider"
)

// seen is what a test server received.
type seen struct {
	mu       sync.Mutex
	requests []seenRequest
}

type seenRequest struct {
	Path   string
	Header http.Header
	Body   []byte
}

func (s *seen) add(r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, seenRequest{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
}

func (s *seen) all() []seenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seenRequest(nil), s.requests...)
}

// serve starts a server that records each request and answers with h.
func serve(t *testing.T, h http.HandlerFunc) (*httptest.Server, *seen) {
	t.Helper()
	s := &seen{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.add(r)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, s
}

// sseBytes answers every request with body as an event stream, verbatim.
func sseBytes(body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("X-Request-Id", "req_fixture")
		w.WriteHeader(http.StatusOK)
		w.Write(body) //nolint:errcheck // the client may be gone
	}
}

// reply answers with a fixed status, headers and body.
func reply(status int, contentType, body string, kv ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(kv); i += 2 {
			w.Header().Set(kv[i], kv[i+1])
		}
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(status)
		io.WriteString(w, body) //nolint:errcheck // the client may be gone
	}
}

func newAdapter(t *testing.T, baseURL string, o Options) *Adapter {
	t.Helper()
	o.BaseURL = baseURL
	if o.APIKey == "" {
		o.APIKey = "sk-test"
	}
	a, err := New(o)
	if err != nil {
		t.Fatalf("New(%+v) error = %v", o, err)
	}
	return a
}

// outcome is what one Stream call produced.
type outcome struct {
	resp   *assemble.Response
	err    error
	frames []provider.Frame
}

func (o outcome) failure() *provider.Failure {
	var f *provider.Failure
	if errors.As(o.err, &f) {
		return f
	}
	return nil
}

// deltaText joins the normalized text of every relayed frame.
func (o outcome) deltaText() string {
	var b strings.Builder
	for _, f := range o.frames {
		if f.Delta != nil {
			b.WriteString(f.Delta.Text)
		}
	}
	return b.String()
}

// deltaArgs joins the normalized argument deltas per block index.
func (o outcome) deltaArgs() map[int]string {
	m := map[int]string{}
	for _, f := range o.frames {
		if f.Delta == nil {
			continue
		}
		for _, tc := range f.Delta.ToolCalls {
			m[tc.Index] += tc.Arguments
		}
	}
	return m
}

// stream runs a.Stream with a deadline that only prevents a hang.
func stream(t *testing.T, a *Adapter, body []byte) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var o outcome
	o.resp, o.err = a.Stream(ctx, body, func(f provider.Frame) error {
		f.Raw = append([]byte(nil), f.Raw...)
		o.frames = append(o.frames, f)
		return nil
	})
	if (o.resp == nil) == (o.err == nil) {
		t.Fatalf("Stream() = %v, %v; want exactly one of response and error", o.resp, o.err)
	}
	if o.err != nil && o.failure() == nil {
		t.Fatalf("Stream() error = %T %v; want a *provider.Failure", o.err, o.err)
	}
	return o
}

// fixture reads testdata/name.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fixtureFiles returns every .sse fixture's bytes.
func fixtureFiles(t testing.TB) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*.sse"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	out := map[string][]byte{}
	for _, p := range paths {
		out[filepath.Base(p)] = fixture(t, filepath.Base(p))
	}
	return out
}

// sseEvent is one event of a fixture, split the way a client would.
type sseEvent struct {
	name string
	data []byte
}

// splitSSE splits an event-stream body into its events (comments skipped).
func splitSSE(body []byte) []sseEvent {
	var out []sseEvent
	var cur sseEvent
	var data [][]byte
	for _, line := range bytes.Split(body, []byte("\n")) {
		switch {
		case len(line) == 0:
			if data != nil {
				cur.data = bytes.Join(data, []byte("\n"))
				out = append(out, cur)
			}
			cur, data = sseEvent{}, nil
		case bytes.HasPrefix(line, []byte(":")):
		case bytes.HasPrefix(line, []byte("event:")):
			cur.name = string(bytes.TrimSpace(line[len("event:"):]))
		case bytes.HasPrefix(line, []byte("data:")):
			data = append(data, bytes.TrimPrefix(line[len("data:"):], []byte(" ")))
		}
	}
	if data != nil {
		cur.data = bytes.Join(data, []byte("\n"))
		out = append(out, cur)
	}
	return out
}

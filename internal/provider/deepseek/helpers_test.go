package deepseek

import (
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

// traceID is the x-ds-trace-id every fixture server sends.
const traceID = "ds-trace-7f3a9c"

// received is what a test server was sent.
type received struct {
	mu       sync.Mutex
	requests []receivedRequest
}

type receivedRequest struct {
	Path   string
	Header http.Header
	Body   []byte
}

func (s *received) all() []receivedRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]receivedRequest(nil), s.requests...)
}

// serve starts a server that records each request and answers with h.
func serve(t *testing.T, h http.HandlerFunc) (*httptest.Server, *received) {
	t.Helper()
	s := &received{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.requests = append(s.requests, receivedRequest{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, s
}

// sse answers with body as an event stream, verbatim, the way DeepSeek
// does: its request id only in x-ds-trace-id.
func sse(body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.Header().Set("x-ds-trace-id", traceID)
		w.WriteHeader(http.StatusOK)
		w.Write(body) //nolint:errcheck // the client may be gone
	}
}

// reply answers with a fixed status and JSON body, plus header pairs.
func reply(status int, body string, kv ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(kv); i += 2 {
			w.Header().Set(kv[i], kv[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body) //nolint:errcheck // the client may be gone
	}
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "streams", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fixtureNames(t testing.TB) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "streams", "*.sse"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no stream fixtures: %v", err)
	}
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = filepath.Base(p)
	}
	return names
}

func newAdapter(t testing.TB, baseURL string, o Options) *Adapter {
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

// deltaText joins the visible text of every relayed delta.
func (o outcome) deltaText() string {
	var b strings.Builder
	for _, f := range o.frames {
		if f.Delta != nil {
			b.WriteString(f.Delta.Text)
		}
	}
	return b.String()
}

// stream runs a.Stream with a deadline that only prevents a hang.
func stream(t testing.TB, a *Adapter, body []byte) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
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

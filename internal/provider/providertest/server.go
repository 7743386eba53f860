package providertest

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Request is what a test server was sent.
type Request struct {
	Path   string
	Header http.Header
	Body   []byte
}

// Received records the requests a test server was sent.
type Received struct {
	mu       sync.Mutex
	requests []Request
}

// add records r, leaving its body to be read again.
func (s *Received) add(r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, Request{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
}

// All returns the requests so far, in order.
func (s *Received) All() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// One runs f and returns the one request received while it ran. It fails
// t unless there was exactly one.
func (s *Received) One(t testing.TB, f func()) Request {
	t.Helper()
	before := len(s.All())
	f()
	reqs := s.All()
	if len(reqs) != before+1 {
		t.Fatalf("server saw %d requests; want 1", len(reqs)-before)
	}
	return reqs[len(reqs)-1]
}

// Start starts a server that answers every request with h and records
// nothing (for fuzz targets, which send many); t's cleanup closes it.
func Start(t testing.TB, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// Serve starts a server that records each request and answers it with h;
// t's cleanup closes it.
func Serve(t testing.TB, h http.HandlerFunc) (*httptest.Server, *Received) {
	t.Helper()
	s := &Received{}
	srv := Start(t, func(w http.ResponseWriter, r *http.Request) {
		s.add(r)
		h(w, r)
	})
	return srv, s
}

package providertest

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/mockllm"
)

// Recorded is a mock answer as it came off the wire: the headers and the
// body bytes mockllm's server wrote.
type Recorded struct {
	Header http.Header
	Body   []byte
}

// Frames counts the body's data lines: the frames an adapter relays.
func (r Recorded) Frames() int {
	n := 0
	for line := range bytes.SplitSeq(r.Body, []byte("\n")) {
		if bytes.HasPrefix(line, []byte("data: ")) {
			n++
		}
	}
	return n
}

// RecordMock renders resp through mockllm's server once, as the answer to a
// POST of reqBody to path (such as /v1/chat/completions).
func RecordMock(tb testing.TB, path, reqBody string, resp *mockllm.Response) Recorded {
	tb.Helper()
	rec := httptest.NewRecorder()
	mockllm.New(mockllm.Queue(resp)).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(reqBody)))
	if rec.Code != http.StatusOK {
		tb.Fatalf("providertest: mockllm answered %d: %s", rec.Code, rec.Body.String())
	}
	return Recorded{Header: rec.Header().Clone(), Body: bytes.Clone(rec.Body.Bytes())}
}

// Replay is a RoundTripper that answers every request with one recorded
// answer from memory, for benchmarks: an adapter given an http.Client with
// it reads the bytes through its production path (openai-go, the SSE
// decoder over the body, the translator) with no socket in between.
type Replay Recorded

// RoundTrip reads and closes the request's body and answers 200 with the
// recorded headers and body.
func (r Replay) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body) //nolint:errcheck // the request body is the caller's own
		req.Body.Close()
	}
	return &http.Response{
		Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: r.Header.Clone(), Body: io.NopCloser(bytes.NewReader(r.Body)), ContentLength: -1, Request: req,
	}, nil
}

// Client is an http.Client answering every request with r.
func (r Recorded) Client() *http.Client { return &http.Client{Transport: Replay(r)} }

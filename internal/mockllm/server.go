package mockllm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Script decides the response to each request.
type Script interface {
	Respond(req *Request) *Response
}

// ScriptFunc adapts a function to Script.
type ScriptFunc func(req *Request) *Response

// Respond calls f.
func (f ScriptFunc) Respond(req *Request) *Response { return f(req) }

// Queue answers requests with rs in order; once they are used up, every
// request gets a 500 "script exhausted" error.
func Queue(rs ...*Response) Script {
	var mu sync.Mutex
	return ScriptFunc(func(*Request) *Response {
		mu.Lock()
		defer mu.Unlock()
		if len(rs) == 0 {
			return Error(http.StatusInternalServerError, "server_error", "mockllm: script exhausted", nil)
		}
		r := rs[0]
		rs = rs[1:]
		return r
	})
}

// Server is the mock provider. It is an http.Handler serving
// /v1/chat/completions, /v1/responses and /v1/messages (and each without
// /v1).
type Server struct {
	script Script

	mu       sync.Mutex
	requests []*Request
	forget   bool
}

// New returns a server answering with script; nil means Default(DefaultOptions{}).
func New(script Script) *Server {
	if script == nil {
		script = Default(DefaultOptions{})
	}
	return &Server{script: script}
}

// ForgetRequests makes the server keep no request it receives from now
// on (Requests returns only those received before): a load test's mock
// would otherwise hold every body it was sent.
func (s *Server) ForgetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forget = true
}

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

// ServeHTTP answers one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/chat/completions", "/chat/completions", "/v1/responses", "/responses", "/v1/messages", "/messages":
	case "/v1/models", "/models":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"mock-1","object":"model","owned_by":"mockllm"}]}`) //nolint:errcheck // best effort
		return
	default:
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	req, err := parseRequest(r, body)
	if err != nil {
		msg := "mockllm: body is not a request for " + r.URL.Path
		e := Error(http.StatusBadRequest, "invalid_request_error", msg, nil)
		if isMessagesPath(r.URL.Path) {
			e = AnthropicError(http.StatusBadRequest, "invalid_request_error", msg, nil)
		}
		writeError(r.Context(), w, e.Status, e)
		return
	}
	req.written = new(atomic.Int64)
	s.mu.Lock()
	if !s.forget {
		s.requests = append(s.requests, req)
	}
	s.mu.Unlock()
	resp := s.script.Respond(req)
	cw := &countingWriter{ResponseWriter: w, n: req.written}
	if req.IsResponses() && !req.Stream {
		writeResponsesJSON(r.Context(), cw, resp)
		return
	}
	s.write(r.Context(), cw, resp, req)
}

// countingWriter counts the body bytes written.
type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingWriter) Flush() {
	if fl, ok := c.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
}

// writeError writes resp's body with status. It never writes to resp: a
// script may return the same response to concurrent requests.
func writeError(ctx context.Context, w http.ResponseWriter, status int, resp *Response) {
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if f := resp.Flood; f != nil && f.Kind == FloodBody {
		f.writeBody(&floodWriter{ctx: ctx, w: w, flush: func() {}}, false)
		return
	}
	io.WriteString(w, resp.Body) //nolint:errcheck // the client may be gone
}

func (s *Server) write(ctx context.Context, w http.ResponseWriter, resp *Response, req *Request) {
	if resp == nil {
		resp = Error(http.StatusInternalServerError, "server_error", "mockllm: script returned no response", nil)
	}
	status := resp.Status
	if status == 0 {
		status = http.StatusOK
	}
	if status != http.StatusOK || resp.NotStream {
		writeError(ctx, w, status, resp)
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	reqID := "X-Request-Id"
	if req.IsMessages() {
		reqID = "Request-Id" // Anthropic's
	}
	h.Set(reqID, "req_mock_"+strconv.FormatInt(time.Now().UnixNano(), 36))
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	flush := func() {
		if fl != nil {
			fl.Flush()
		}
	}
	flush()
	sleep := func(d time.Duration) bool {
		if d <= 0 {
			return ctx.Err() == nil
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	if resp.Stall > 0 {
		tick := min(resp.Stall/4+time.Millisecond, 250*time.Millisecond)
		keepAlive := resp.KeepAlive
		if keepAlive == "" {
			keepAlive = ": keep-alive\n\n"
		}
		for end := time.Now().Add(resp.Stall); time.Now().Before(end); {
			if _, err := io.WriteString(w, keepAlive); err != nil {
				return
			}
			flush()
			if !sleep(tick) {
				return
			}
		}
	}
	for i, f := range resp.Frames {
		if resp.DisconnectAfter > 0 && i == resp.DisconnectAfter {
			panic(http.ErrAbortHandler) // closes the connection without ending the body
		}
		if !sleep(resp.Latency + f.Delay) {
			return
		}
		if _, err := io.WriteString(w, render(f)); err != nil {
			return
		}
		flush()
	}
	if f := resp.Flood; f != nil && f.Kind != FloodBody {
		if !f.write(&floodWriter{ctx: ctx, w: w, flush: flush}, floodDialectOf(req)) {
			return
		}
	}
	if resp.DisconnectAfter > 0 && resp.DisconnectAfter >= len(resp.Frames) {
		panic(http.ErrAbortHandler)
	}
	if resp.Done {
		if !sleep(resp.Latency) {
			return
		}
		end := "data: [DONE]\n\n"
		if resp.DoneWithoutBlankLine {
			end = "data: [DONE]\n"
		}
		io.WriteString(w, end) //nolint:errcheck // the client may be gone
		flush()
	}
}

func render(f Frame) string {
	switch {
	case f.Verbatim != "":
		return f.Verbatim
	case f.Comment != "":
		return ": " + f.Comment + "\n\n"
	case f.Event != "":
		return "event: " + f.Event + "\ndata: " + f.Data + "\n\n"
	}
	return "data: " + f.Data + "\n\n"
}

// ListenAndServe serves the mock on addr until ctx is done. It calls ready
// with the base URL (ending in /v1) once listening.
func (s *Server) ListenAndServe(ctx context.Context, addr string, ready func(baseURL string)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("mockllm: %w", err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	if ready != nil {
		ready("http://" + ln.Addr().String() + "/v1")
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("mockllm: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("mockllm: shutdown: %w", err)
	}
	<-errc
	return nil
}

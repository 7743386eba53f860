package responses

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/provider"
)

const okStream = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"m\",\"output_index\":0,\"delta\":\"hi\"}\n\n" +
	"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"status\":\"completed\"}}\n\n"

func TestAdapterHTTPErrors(t *testing.T) {
	const rateLimitBody = `{"error":{"message":"Rate limit reached for gpt-5 on requests per min (RPM): Limit 3. Please try again in 1.2s.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`
	tests := []struct {
		name       string
		h          http.HandlerFunc
		class      provider.Class
		status     int
		retryAfter time.Duration
		requestID  string
	}{
		{
			name:  "429 retry-after",
			h:     reply(429, "application/json", rateLimitBody, "retry-after", "2", "x-request-id", "req_429"),
			class: provider.ClassRateLimit, status: 429, retryAfter: 2 * time.Second, requestID: "req_429",
		},
		{
			name:  "429 retry-after-ms",
			h:     reply(429, "application/json", rateLimitBody, "retry-after-ms", "250"),
			class: provider.ClassRateLimit, status: 429, retryAfter: 250 * time.Millisecond,
		},
		{
			name:  "429 hint in the message",
			h:     reply(429, "application/json", rateLimitBody),
			class: provider.ClassRateLimit, status: 429, retryAfter: 1200 * time.Millisecond,
		},
		{
			name:  "429 insufficient quota",
			h:     reply(429, "application/json", `{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`),
			class: provider.ClassQuota, status: 429,
		},
		{
			name:  "500",
			h:     reply(500, "application/json", `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":"server_error"}}`, "x-request-id", "req_500"),
			class: provider.ClassServer, status: 500, requestID: "req_500",
		},
		{
			name:  "401",
			h:     reply(401, "application/json", `{"error":{"message":"Incorrect API key provided: sk-test.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`),
			class: provider.ClassAuth, status: 401,
		},
		{
			name:  "400",
			h:     reply(400, "application/json", `{"error":{"message":"Invalid 'input[0].content'.","type":"invalid_request_error","param":"input[0].content","code":"invalid_value"}}`),
			class: provider.ClassInvalidRequest, status: 400,
		},
		{
			name:  "503 with an HTML body",
			h:     reply(503, "text/html", "<html>busy</html>", "x-request-id", "req_gw"),
			class: provider.ClassServer, status: 503, requestID: "req_gw",
		},
		{
			name:  "200 with HTML",
			h:     reply(200, "text/html", "<html>login</html>", "x-request-id", "req_html"),
			class: provider.ClassMalformed, status: 200, requestID: "req_html",
		},
		{
			name:  "200 with a JSON error body and an in-band hint",
			h:     reply(200, "application/json", rateLimitBody),
			class: provider.ClassRateLimit, status: 200, retryAfter: 1200 * time.Millisecond,
		},
	}
	for _, tt := range tests {
		for _, streaming := range []bool{true, false} {
			t.Run(tt.name+map[bool]string{true: " stream", false: " json"}[streaming], func(t *testing.T) {
				srv, _ := serve(t, tt.h)
				o := stream(t, newAdapter(t, srv.URL+"/v1", Options{Stream: streaming}), []byte(`{}`))
				f := o.failure()
				if f == nil {
					t.Fatalf("Stream() = %+v; want failure %s", o.resp, tt.class)
				}
				if f.Class != tt.class || f.Status != tt.status || f.RetryAfter != tt.retryAfter || f.RequestID != tt.requestID {
					t.Errorf("Stream() failure = {%s %d %v %q}; want {%s %d %v %q}",
						f.Class, f.Status, f.RetryAfter, f.RequestID, tt.class, tt.status, tt.retryAfter, tt.requestID)
				}
				if msg := f.Error(); strings.Contains(msg, "sk-test") || strings.Contains(msg, "Rate limit reached") {
					t.Errorf("Failure.Error() = %q; must not carry the provider's message", msg)
				}
			})
		}
	}
}

// TestAdapterIdleTimeout: keep-alive comments are not progress, and a
// non-streamed answer that sends nothing times out too.
func TestAdapterIdleTimeout(t *testing.T) {
	tests := []struct {
		name   string
		stream bool
		h      http.HandlerFunc
	}{
		{
			name: "comments only", stream: true,
			h: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				tick := time.NewTicker(10 * time.Millisecond)
				defer tick.Stop()
				for {
					if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
						return
					}
					w.(http.Flusher).Flush()
					select {
					case <-r.Context().Done():
						return
					case <-tick.C:
					}
				}
			},
		},
		{
			name: "stall after an event", stream: true,
			h: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				io.WriteString(w, "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"status\":\"in_progress\"}}\n\n") //nolint:errcheck // test
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			},
		},
		{
			name: "no response headers",
			h:    func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
		},
		{
			name: "body stalls halfway",
			h: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusOK)
				io.WriteString(w, `{"id":"r","status":`) //nolint:errcheck // test
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := serve(t, tt.h)
			o := stream(t, newAdapter(t, srv.URL+"/v1", Options{Stream: tt.stream, IdleTimeout: 100 * time.Millisecond}), []byte(`{}`))
			if f := o.failure(); f == nil || f.Class != provider.ClassTimeout {
				t.Errorf("Stream() error = %v; want TIMEOUT", o.err)
			}
		})
	}
}

func TestAdapterDisconnect(t *testing.T) {
	tests := []struct {
		name string
		h    http.HandlerFunc
		text string
	}{
		{
			name: "mid-stream",
			h: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				io.WriteString(w, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"m\",\"output_index\":0,\"delta\":\"half\"}\n\n") //nolint:errcheck // test
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler) // cut the connection mid-body
			},
			text: "half",
		},
		{
			name: "mid-body",
			h: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Length", "100")
				w.WriteHeader(http.StatusOK)
				io.WriteString(w, `{"id":"r","status":"comp`) //nolint:errcheck // test
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := serve(t, tt.h)
			o := stream(t, newAdapter(t, srv.URL+"/v1", Options{Stream: true}), []byte(`{}`))
			if f := o.failure(); f == nil || f.Class != provider.ClassTransport {
				t.Errorf("Stream() error = %v; want TRANSPORT", o.err)
			}
			if got := o.deltaText(); got != tt.text {
				t.Errorf("relayed text = %q; want %q", got, tt.text)
			}
		})
	}
}

func TestAdapterConnectionRefused(t *testing.T) {
	srv, _ := serve(t, sseBytes([]byte(okStream)))
	url := srv.URL
	srv.Close()
	o := stream(t, newAdapter(t, url+"/v1", Options{Stream: true}), []byte(`{}`))
	if f := o.failure(); f == nil || f.Class != provider.ClassTransport {
		t.Errorf("Stream() error = %v; want TRANSPORT", o.err)
	}
}

func TestAdapterCancelled(t *testing.T) {
	srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "data: {\"type\":\"response.created\",\"response\":{\"id\":\"r\"}}\n\n") //nolint:errcheck // test
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	a := newAdapter(t, srv.URL+"/v1", Options{Stream: true})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	_, err := a.Stream(ctx, []byte(`{}`), func(f provider.Frame) error {
		cancel() // the caller gives up after the first frame
		return nil
	})
	if f := provider.AsFailure(err); f == nil || f.Class != provider.ClassCancelled {
		t.Errorf("Stream() error = %v; want CANCELLED", err)
	}
}

// TestAdapterSinkError: a sink error comes back as is, not as a provider
// failure, in both modes.
func TestAdapterSinkError(t *testing.T) {
	for _, tt := range []struct {
		name   string
		h      http.HandlerFunc
		stream bool
	}{
		{"stream", sseBytes([]byte(okStream)), true},
		{"json", reply(200, "application/json", `{"id":"r","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"hi"}]}]}`), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := serve(t, tt.h)
			a := newAdapter(t, srv.URL+"/v1", Options{Stream: tt.stream})
			sinkErr := errors.New("relay down")
			_, err := a.Stream(t.Context(), []byte(`{}`), func(provider.Frame) error { return sinkErr })
			if err != sinkErr { //nolint:errorlint // the very error, unwrapped
				t.Errorf("Stream() error = %v; want the sink's error as is", err)
			}
		})
	}
}

// TestAdapterIgnoresEnvironment: base URL and key are exactly those given;
// OPENAI_* variables are never read; the body is sent verbatim to
// /responses with the Accept header of the mode.
func TestAdapterIgnoresEnvironment(t *testing.T) {
	srv, seen := serve(t, sseBytes([]byte(okStream)))
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/env")
	t.Setenv("OPENAI_ORG_ID", "org-env")
	t.Setenv("OPENAI_PROJECT_ID", "proj-env")

	tests := []struct {
		name       string
		key        string
		stream     bool
		wantAuth   string
		wantAccept string
	}{
		{"explicit key, stream", "sk-explicit", true, "Bearer sk-explicit", "text/event-stream"},
		{"no key, json", "", false, "", "application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := New(Options{BaseURL: srv.URL + "/v1", APIKey: tt.key, Stream: tt.stream, Headers: map[string]string{"X-Custom": "c"}})
			if err != nil {
				t.Fatalf("New() error = %v", err)
			}
			before := len(seen.all())
			o := stream(t, a, []byte(`{"model":"m"}`))
			if o.err != nil {
				t.Fatalf("Stream() error = %v; want nil", o.err)
			}
			reqs := seen.all()
			if len(reqs) != before+1 {
				t.Fatalf("server saw %d requests; want 1", len(reqs)-before)
			}
			r := reqs[len(reqs)-1]
			if r.Path != "/v1/responses" {
				t.Errorf("request path = %q; want /v1/responses", r.Path)
			}
			if got := r.Header.Get("Authorization"); got != tt.wantAuth {
				t.Errorf("Authorization = %q; want %q", got, tt.wantAuth)
			}
			for _, h := range []string{"OpenAI-Organization", "OpenAI-Project"} {
				if v := r.Header.Get(h); v != "" {
					t.Errorf("header %s = %q; want none (read from the environment)", h, v)
				}
			}
			if got := r.Header.Get("X-Custom"); got != "c" {
				t.Errorf("X-Custom = %q; want c", got)
			}
			if got := r.Header.Get("Accept"); got != tt.wantAccept {
				t.Errorf("Accept = %q; want %q", got, tt.wantAccept)
			}
			if got := string(r.Body); got != `{"model":"m"}` {
				t.Errorf("request body = %q; want the body given, verbatim", got)
			}
		})
	}
}

func TestNewRejectsBadBaseURL(t *testing.T) {
	for _, u := range []string{"", "api.openai.com/v1", "ftp://x"} {
		if _, err := New(Options{BaseURL: u}); err == nil {
			t.Errorf("New(BaseURL %q) error = nil; want an error", u)
		}
	}
}

// TestAdapterNoSDKRetries: the executor owns retries, so a 500 is one request.
func TestAdapterNoSDKRetries(t *testing.T) {
	srv, seen := serve(t, reply(500, "application/json", `{"error":{"message":"x","type":"server_error"}}`, "retry-after-ms", "1"))
	o := stream(t, newAdapter(t, srv.URL+"/v1", Options{Stream: true}), []byte(`{}`))
	if o.err == nil {
		t.Fatalf("Stream() error = nil; want SERVER")
	}
	if n := len(seen.all()); n != 1 {
		t.Errorf("server saw %d requests; want 1", n)
	}
}

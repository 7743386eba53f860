package responses

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/providertest"
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
			h:     providertest.Reply(429, "application/json", rateLimitBody, "retry-after", "2", "x-request-id", "req_429"),
			class: provider.ClassRateLimit, status: 429, retryAfter: 2 * time.Second, requestID: "req_429",
		},
		{
			name:  "429 retry-after-ms",
			h:     providertest.Reply(429, "application/json", rateLimitBody, "retry-after-ms", "250"),
			class: provider.ClassRateLimit, status: 429, retryAfter: 250 * time.Millisecond,
		},
		{
			name:  "429 hint in the message",
			h:     providertest.Reply(429, "application/json", rateLimitBody),
			class: provider.ClassRateLimit, status: 429, retryAfter: 1200 * time.Millisecond,
		},
		{
			name:  "429 insufficient quota",
			h:     providertest.Reply(429, "application/json", `{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`),
			class: provider.ClassQuota, status: 429,
		},
		{
			name:  "500",
			h:     providertest.Reply(500, "application/json", `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":"server_error"}}`, "x-request-id", "req_500"),
			class: provider.ClassServer, status: 500, requestID: "req_500",
		},
		{
			name:  "401",
			h:     providertest.Reply(401, "application/json", `{"error":{"message":"Incorrect API key provided: sk-test.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`),
			class: provider.ClassAuth, status: 401,
		},
		{
			name:  "400",
			h:     providertest.Reply(400, "application/json", `{"error":{"message":"Invalid 'input[0].content'.","type":"invalid_request_error","param":"input[0].content","code":"invalid_value"}}`),
			class: provider.ClassInvalidRequest, status: 400,
		},
		{
			name:  "503 with an HTML body",
			h:     providertest.Reply(503, "text/html", "<html>busy</html>", "x-request-id", "req_gw"),
			class: provider.ClassServer, status: 503, requestID: "req_gw",
		},
		{
			name:  "200 with HTML",
			h:     providertest.Reply(200, "text/html", "<html>login</html>", "x-request-id", "req_html"),
			class: provider.ClassMalformed, status: 200, requestID: "req_html",
		},
		{
			name:  "200 with a JSON error body and an in-band hint",
			h:     providertest.Reply(200, "application/json", rateLimitBody),
			class: provider.ClassRateLimit, status: 200, retryAfter: 1200 * time.Millisecond,
		},
	}
	for _, tt := range tests {
		for _, streaming := range []bool{true, false} {
			t.Run(tt.name+map[bool]string{true: " stream", false: " json"}[streaming], func(t *testing.T) {
				srv, _ := providertest.Serve(t, tt.h)
				o := providertest.Stream(t, newAdapter(t, srv.URL+"/v1", Options{Stream: streaming}), []byte(`{}`))
				f := providertest.CheckFailure(t, o, provider.Failure{Class: tt.class, Status: tt.status, RetryAfter: tt.retryAfter, RequestID: tt.requestID})
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
			h: providertest.KeepAlive(10 * time.Millisecond),
		},
		{
			name: "stall after an event", stream: true,
			h: providertest.Stall("text/event-stream", "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"status\":\"in_progress\"}}\n\n"),
		},
		{
			name: "no response headers",
			h:    func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
		},
		{
			name: "body stalls halfway",
			h:    providertest.Stall("application/json", `{"id":"r","status":`),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := providertest.Serve(t, tt.h)
			o := providertest.Stream(t, newAdapter(t, srv.URL+"/v1", Options{Stream: tt.stream, IdleTimeout: 100 * time.Millisecond}), []byte(`{}`))
			if f := o.Failure(); f == nil || f.Class != provider.ClassTimeout {
				t.Errorf("Stream() error = %v; want TIMEOUT", o.Err)
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
			h:    providertest.Abort("text/event-stream", "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"m\",\"output_index\":0,\"delta\":\"half\"}\n\n"),
			text: "half",
		},
		{
			name: "mid-body",
			h:    providertest.Abort("application/json", `{"id":"r","status":"comp`, "Content-Length", "100"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := providertest.Serve(t, tt.h)
			o := providertest.Stream(t, newAdapter(t, srv.URL+"/v1", Options{Stream: true}), []byte(`{}`))
			if f := o.Failure(); f == nil || f.Class != provider.ClassTransport {
				t.Errorf("Stream() error = %v; want TRANSPORT", o.Err)
			}
			if got := o.DeltaText(); got != tt.text {
				t.Errorf("relayed text = %q; want %q", got, tt.text)
			}
		})
	}
}

func TestAdapterConnectionRefused(t *testing.T) {
	srv, _ := providertest.Serve(t, sseBytes([]byte(okStream)))
	url := srv.URL
	srv.Close()
	o := providertest.Stream(t, newAdapter(t, url+"/v1", Options{Stream: true}), []byte(`{}`))
	if f := o.Failure(); f == nil || f.Class != provider.ClassTransport {
		t.Errorf("Stream() error = %v; want TRANSPORT", o.Err)
	}
}

func TestAdapterCancelled(t *testing.T) {
	srv, _ := providertest.Serve(t, providertest.Stall("text/event-stream", "data: {\"type\":\"response.created\",\"response\":{\"id\":\"r\"}}\n\n"))
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
		{"json", providertest.Reply(200, "application/json", `{"id":"r","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"hi"}]}]}`), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := providertest.Serve(t, tt.h)
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
	srv, seen := providertest.Serve(t, sseBytes([]byte(okStream)))
	providertest.PoisonEnv(t)

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
			r := seen.One(t, func() {
				if o := providertest.Stream(t, a, []byte(`{"model":"m"}`)); o.Err != nil {
					t.Fatalf("Stream() error = %v; want nil", o.Err)
				}
			})
			providertest.CheckRequest(t, r, providertest.WantRequest{
				Path:   "/v1/responses",
				Header: map[string]string{"Authorization": tt.wantAuth, "X-Custom": "c", "Accept": tt.wantAccept},
				Body:   `{"model":"m"}`,
			})
			providertest.CheckNoEnv(t, r)
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
	srv, seen := providertest.Serve(t, providertest.Reply(500, "application/json", `{"error":{"message":"x","type":"server_error"}}`, "retry-after-ms", "1"))
	o := providertest.Stream(t, newAdapter(t, srv.URL+"/v1", Options{Stream: true}), []byte(`{}`))
	if o.Err == nil {
		t.Fatalf("Stream() error = nil; want SERVER")
	}
	if n := len(seen.All()); n != 1 {
		t.Errorf("server saw %d requests; want 1", n)
	}
}

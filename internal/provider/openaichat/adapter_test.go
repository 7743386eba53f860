package openaichat

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

const okStream = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"

func TestAdapterHTTPErrors(t *testing.T) {
	fixed := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	old := timeNow
	timeNow = func() time.Time { return fixed }
	t.Cleanup(func() { timeNow = old })

	const rateLimitBody = `{"error":{"message":"Rate limit reached for gpt-4o on requests per min (RPM): Limit 3. Please try again in 1.1s.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`
	const plainRateLimitBody = `{"error":{"message":"Rate limit reached.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`
	tests := []struct {
		name       string
		h          http.HandlerFunc
		class      provider.Class
		status     int
		retryAfter time.Duration
		requestID  string
	}{
		{
			name:  "429 retry-after-ms",
			h:     providertest.Reply(429, "application/json", plainRateLimitBody, "retry-after-ms", "250", "x-request-id", "req_ms"),
			class: provider.ClassRateLimit, status: 429, retryAfter: 250 * time.Millisecond, requestID: "req_ms",
		},
		{
			name:  "429 retry-after seconds",
			h:     providertest.Reply(429, "application/json", plainRateLimitBody, "retry-after", "2", "x-ds-trace-id", "ds_trace"),
			class: provider.ClassRateLimit, status: 429, retryAfter: 2 * time.Second, requestID: "ds_trace",
		},
		{
			name:  "429 retry-after fractional seconds",
			h:     providertest.Reply(429, "application/json", plainRateLimitBody, "retry-after", "0.5", "X-Generation-Id", "gen-1"),
			class: provider.ClassRateLimit, status: 429, retryAfter: 500 * time.Millisecond, requestID: "gen-1",
		},
		{
			name:  "429 retry-after date",
			h:     providertest.Reply(429, "application/json", plainRateLimitBody, "retry-after", fixed.Add(7*time.Second).Format(http.TimeFormat), "request-id", "req_ant"),
			class: provider.ClassRateLimit, status: 429, retryAfter: 7 * time.Second, requestID: "req_ant",
		},
		{
			name:  "429 hint in the message",
			h:     providertest.Reply(429, "application/json", rateLimitBody, "x-request-id", "req_msg"),
			class: provider.ClassRateLimit, status: 429, retryAfter: 1100 * time.Millisecond, requestID: "req_msg",
		},
		{
			name:  "429 no hint",
			h:     providertest.Reply(429, "application/json", plainRateLimitBody),
			class: provider.ClassRateLimit, status: 429,
		},
		{
			name:  "429 insufficient quota",
			h:     providertest.Reply(429, "application/json", `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`),
			class: provider.ClassQuota, status: 429,
		},
		{
			name:  "429 request too large",
			h:     providertest.Reply(429, "application/json", `{"error":{"message":"Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Requested 45000.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`),
			class: provider.ClassTooLarge, status: 429,
		},
		{
			name:  "402",
			h:     providertest.Reply(402, "application/json", `{"error":{"message":"Payment required","code":402}}`),
			class: provider.ClassPayment, status: 402,
		},
		{
			name:  "402 credits with a numeric code",
			h:     providertest.Reply(402, "application/json", `{"error":{"code":402,"message":"Insufficient credits. Add more using https://openrouter.ai/settings/credits"}}`),
			class: provider.ClassQuota, status: 402,
		},
		{
			name:  "429 quota with a numeric code",
			h:     providertest.Reply(429, "application/json", `{"error":{"code":429,"message":"You exceeded your current quota","type":"insufficient_quota"}}`),
			class: provider.ClassQuota, status: 429,
		},
		{
			name:  "500",
			h:     providertest.Reply(500, "application/json", `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`, "x-request-id", "req_500"),
			class: provider.ClassServer, status: 500, requestID: "req_500",
		},
		{
			name:  "401",
			h:     providertest.Reply(401, "application/json", `{"error":{"message":"Incorrect API key provided: sk-test.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`),
			class: provider.ClassAuth, status: 401,
		},
		{
			name:  "400",
			h:     providertest.Reply(400, "application/json", `{"error":{"message":"Invalid 'messages'.","type":"invalid_request_error","param":"messages","code":"invalid_value"}}`),
			class: provider.ClassInvalidRequest, status: 400,
		},
		{
			name:  "502 with an HTML body",
			h:     providertest.Reply(502, "text/html", "<html><body><h1>502 Bad Gateway</h1></body></html>", "x-request-id", "req_gw"),
			class: provider.ClassServer, status: 502, requestID: "req_gw",
		},
		{
			name:  "503 with an empty body",
			h:     providertest.Reply(503, "", ""),
			class: provider.ClassServer, status: 503,
		},
		{
			name:  "429 with a plain-text body",
			h:     providertest.Reply(429, "text/plain", "Too Many Requests", "retry-after", "3"),
			class: provider.ClassRateLimit, status: 429, retryAfter: 3 * time.Second,
		},
		{
			name:  "200 with a JSON error body",
			h:     providertest.Reply(200, "application/json", plainRateLimitBody, "x-request-id", "req_200"),
			class: provider.ClassRateLimit, status: 200, requestID: "req_200",
		},
		{
			name:  "200 with a JSON error body and an in-band hint",
			h:     providertest.Reply(200, "application/json; charset=utf-8", rateLimitBody),
			class: provider.ClassRateLimit, status: 200, retryAfter: 1100 * time.Millisecond,
		},
		{
			name:  "200 with JSON that is neither a stream nor a completion",
			h:     providertest.Reply(200, "application/json", `{"status":"ok"}`),
			class: provider.ClassMalformed, status: 200,
		},
		{
			name:  "200 with HTML",
			h:     providertest.Reply(200, "text/html", "<html>login</html>"),
			class: provider.ClassMalformed, status: 200,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := providertest.Serve(t, tt.h)
			o := providertest.Stream(t, newAdapter(t, srv.URL+"/v1", Options{}), []byte(`{}`))
			f := providertest.CheckFailure(t, o, provider.Failure{Class: tt.class, Status: tt.status, RetryAfter: tt.retryAfter, RequestID: tt.requestID})
			if msg := f.Error(); strings.Contains(msg, "sk-test") {
				t.Errorf("Failure.Error() = %q; must not carry the provider's message (it echoes the key)", msg)
			}
		})
	}
}

// TestAdapterIdleTimeout: keep-alive comments are not progress.
func TestAdapterIdleTimeout(t *testing.T) {
	tests := []struct {
		name string
		h    http.HandlerFunc
	}{
		{
			name: "comments only",
			h:    providertest.KeepAlive(10 * time.Millisecond),
		},
		{
			name: "stall after content",
			h:    providertest.Stall("text/event-stream", "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n"),
		},
		{
			name: "no response headers",
			h:    func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := providertest.Serve(t, tt.h)
			o := providertest.Stream(t, newAdapter(t, srv.URL+"/v1", Options{IdleTimeout: 100 * time.Millisecond}), []byte(`{}`))
			if f := o.Failure(); f == nil || f.Class != provider.ClassTimeout {
				t.Errorf("Stream() error = %v; want TIMEOUT", o.Err)
			}
		})
	}
}

func TestAdapterDisconnect(t *testing.T) {
	srv, _ := providertest.Serve(t, providertest.Abort("text/event-stream", "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"half\"}}]}\n\n"))
	o := providertest.Stream(t, newAdapter(t, srv.URL+"/v1", Options{}), []byte(`{}`))
	if f := o.Failure(); f == nil || f.Class != provider.ClassTransport {
		t.Errorf("Stream() error = %v; want TRANSPORT", o.Err)
	}
	if got := o.DeltaText(); got != "half" {
		t.Errorf("relayed text = %q; want %q", got, "half")
	}
}

func TestAdapterConnectionRefused(t *testing.T) {
	srv, _ := providertest.Serve(t, sseBytes([]byte(okStream)))
	url := srv.URL
	srv.Close()
	o := providertest.Stream(t, newAdapter(t, url+"/v1", Options{}), []byte(`{}`))
	if f := o.Failure(); f == nil || f.Class != provider.ClassTransport {
		t.Errorf("Stream() error = %v; want TRANSPORT", o.Err)
	}
}

func TestAdapterCancelled(t *testing.T) {
	srv, _ := providertest.Serve(t, providertest.Stall("text/event-stream", "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n"))
	a := newAdapter(t, srv.URL+"/v1", Options{})
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

func TestAdapterSinkError(t *testing.T) {
	srv, _ := providertest.Serve(t, sseBytes([]byte(okStream)))
	a := newAdapter(t, srv.URL+"/v1", Options{})
	sinkErr := errors.New("relay down")
	_, err := a.Stream(t.Context(), []byte(`{}`), func(provider.Frame) error { return sinkErr })
	if !errors.Is(err, sinkErr) {
		t.Errorf("Stream() error = %v; want it to wrap %v", err, sinkErr)
	}
}

// TestAdapterIgnoresEnvironment: base URL and key are exactly those given;
// OPENAI_* variables are never read.
func TestAdapterIgnoresEnvironment(t *testing.T) {
	srv, seen := providertest.Serve(t, sseBytes([]byte(okStream)))
	providertest.PoisonEnv(t)

	tests := []struct {
		name     string
		key      string
		wantAuth string
	}{
		{"explicit key", "sk-explicit", "Bearer sk-explicit"},
		{"no key", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := New(Options{BaseURL: srv.URL + "/v1", APIKey: tt.key, Headers: map[string]string{"X-Custom": "c"}})
			if err != nil {
				t.Fatalf("New() error = %v", err)
			}
			r := seen.One(t, func() {
				if o := providertest.Stream(t, a, []byte(`{"model":"m"}`)); o.Err != nil {
					t.Fatalf("Stream() error = %v; want nil", o.Err)
				}
			})
			providertest.CheckRequest(t, r, providertest.WantRequest{
				Path:   "/v1/chat/completions",
				Header: map[string]string{"Authorization": tt.wantAuth, "X-Custom": "c", "Content-Type": "application/json"},
				Body:   `{"model":"m"}`,
			})
			providertest.CheckNoEnv(t, r)
		})
	}
}

func TestNewRejectsBadBaseURL(t *testing.T) {
	for _, u := range []string{"", "api.openai.com/v1", "ftp://x", "unix:///tmp/s"} {
		if _, err := New(Options{BaseURL: u}); err == nil {
			t.Errorf("New(BaseURL %q) error = nil; want an error", u)
		}
	}
}

// TestAdapterNoSDKRetries: the executor owns retries, so a 500 is one request.
func TestAdapterNoSDKRetries(t *testing.T) {
	srv, seen := providertest.Serve(t, providertest.Reply(500, "application/json", `{"error":{"message":"x","type":"server_error"}}`, "retry-after-ms", "1"))
	o := providertest.Stream(t, newAdapter(t, srv.URL+"/v1", Options{}), []byte(`{}`))
	if o.Err == nil {
		t.Fatalf("Stream() error = nil; want SERVER")
	}
	if n := len(seen.All()); n != 1 {
		t.Errorf("server saw %d requests; want 1", n)
	}
}

package openaichat

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
			h:     reply(429, "application/json", plainRateLimitBody, "retry-after-ms", "250", "x-request-id", "req_ms"),
			class: provider.ClassRateLimit, status: 429, retryAfter: 250 * time.Millisecond, requestID: "req_ms",
		},
		{
			name:  "429 retry-after seconds",
			h:     reply(429, "application/json", plainRateLimitBody, "retry-after", "2", "x-ds-trace-id", "ds_trace"),
			class: provider.ClassRateLimit, status: 429, retryAfter: 2 * time.Second, requestID: "ds_trace",
		},
		{
			name:  "429 retry-after fractional seconds",
			h:     reply(429, "application/json", plainRateLimitBody, "retry-after", "0.5", "X-Generation-Id", "gen-1"),
			class: provider.ClassRateLimit, status: 429, retryAfter: 500 * time.Millisecond, requestID: "gen-1",
		},
		{
			name:  "429 retry-after date",
			h:     reply(429, "application/json", plainRateLimitBody, "retry-after", fixed.Add(7*time.Second).Format(http.TimeFormat), "request-id", "req_ant"),
			class: provider.ClassRateLimit, status: 429, retryAfter: 7 * time.Second, requestID: "req_ant",
		},
		{
			name:  "429 hint in the message",
			h:     reply(429, "application/json", rateLimitBody, "x-request-id", "req_msg"),
			class: provider.ClassRateLimit, status: 429, retryAfter: 1100 * time.Millisecond, requestID: "req_msg",
		},
		{
			name:  "429 no hint",
			h:     reply(429, "application/json", plainRateLimitBody),
			class: provider.ClassRateLimit, status: 429,
		},
		{
			name:  "429 insufficient quota",
			h:     reply(429, "application/json", `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`),
			class: provider.ClassQuota, status: 429,
		},
		{
			name:  "429 request too large",
			h:     reply(429, "application/json", `{"error":{"message":"Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Requested 45000.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`),
			class: provider.ClassTooLarge, status: 429,
		},
		{
			name:  "402",
			h:     reply(402, "application/json", `{"error":{"message":"Payment required","code":402}}`),
			class: provider.ClassPayment, status: 402,
		},
		{
			name:  "402 credits with a numeric code",
			h:     reply(402, "application/json", `{"error":{"code":402,"message":"Insufficient credits. Add more using https://openrouter.ai/settings/credits"}}`),
			class: provider.ClassQuota, status: 402,
		},
		{
			name:  "429 quota with a numeric code",
			h:     reply(429, "application/json", `{"error":{"code":429,"message":"You exceeded your current quota","type":"insufficient_quota"}}`),
			class: provider.ClassQuota, status: 429,
		},
		{
			name:  "500",
			h:     reply(500, "application/json", `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`, "x-request-id", "req_500"),
			class: provider.ClassServer, status: 500, requestID: "req_500",
		},
		{
			name:  "401",
			h:     reply(401, "application/json", `{"error":{"message":"Incorrect API key provided: sk-test.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`),
			class: provider.ClassAuth, status: 401,
		},
		{
			name:  "400",
			h:     reply(400, "application/json", `{"error":{"message":"Invalid 'messages'.","type":"invalid_request_error","param":"messages","code":"invalid_value"}}`),
			class: provider.ClassInvalidRequest, status: 400,
		},
		{
			name:  "502 with an HTML body",
			h:     reply(502, "text/html", "<html><body><h1>502 Bad Gateway</h1></body></html>", "x-request-id", "req_gw"),
			class: provider.ClassServer, status: 502, requestID: "req_gw",
		},
		{
			name:  "503 with an empty body",
			h:     reply(503, "", ""),
			class: provider.ClassServer, status: 503,
		},
		{
			name:  "429 with a plain-text body",
			h:     reply(429, "text/plain", "Too Many Requests", "retry-after", "3"),
			class: provider.ClassRateLimit, status: 429, retryAfter: 3 * time.Second,
		},
		{
			name:  "200 with a JSON error body",
			h:     reply(200, "application/json", plainRateLimitBody, "x-request-id", "req_200"),
			class: provider.ClassRateLimit, status: 200, requestID: "req_200",
		},
		{
			name:  "200 with a JSON error body and an in-band hint",
			h:     reply(200, "application/json; charset=utf-8", rateLimitBody),
			class: provider.ClassRateLimit, status: 200, retryAfter: 1100 * time.Millisecond,
		},
		{
			name:  "200 with a JSON completion, not a stream",
			h:     reply(200, "application/json", `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`),
			class: provider.ClassMalformed, status: 200,
		},
		{
			name:  "200 with HTML",
			h:     reply(200, "text/html", "<html>login</html>"),
			class: provider.ClassMalformed, status: 200,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := serve(t, tt.h)
			o := stream(t, newAdapter(t, srv.URL+"/v1", Options{}), []byte(`{}`))
			f := o.failure()
			if f == nil {
				t.Fatalf("Stream() = %+v; want failure %s", o.resp, tt.class)
			}
			if f.Class != tt.class || f.Status != tt.status || f.RetryAfter != tt.retryAfter || f.RequestID != tt.requestID {
				t.Errorf("Stream() failure = {%s %d %v %q}; want {%s %d %v %q}",
					f.Class, f.Status, f.RetryAfter, f.RequestID, tt.class, tt.status, tt.retryAfter, tt.requestID)
			}
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
			name: "stall after content",
			h: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n") //nolint:errcheck // test
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			},
		},
		{
			name: "no response headers",
			h:    func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := serve(t, tt.h)
			o := stream(t, newAdapter(t, srv.URL+"/v1", Options{IdleTimeout: 100 * time.Millisecond}), []byte(`{}`))
			if f := o.failure(); f == nil || f.Class != provider.ClassTimeout {
				t.Errorf("Stream() error = %v; want TIMEOUT", o.err)
			}
		})
	}
}

func TestAdapterDisconnect(t *testing.T) {
	srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"half\"}}]}\n\n") //nolint:errcheck // test
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // cut the connection mid-body
	})
	o := stream(t, newAdapter(t, srv.URL+"/v1", Options{}), []byte(`{}`))
	if f := o.failure(); f == nil || f.Class != provider.ClassTransport {
		t.Errorf("Stream() error = %v; want TRANSPORT", o.err)
	}
	if got := o.deltaText(); got != "half" {
		t.Errorf("relayed text = %q; want %q", got, "half")
	}
}

func TestAdapterConnectionRefused(t *testing.T) {
	srv, _ := serve(t, sseBytes([]byte(okStream)))
	url := srv.URL
	srv.Close()
	o := stream(t, newAdapter(t, url+"/v1", Options{}), []byte(`{}`))
	if f := o.failure(); f == nil || f.Class != provider.ClassTransport {
		t.Errorf("Stream() error = %v; want TRANSPORT", o.err)
	}
}

func TestAdapterCancelled(t *testing.T) {
	srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n") //nolint:errcheck // test
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
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
	srv, _ := serve(t, sseBytes([]byte(okStream)))
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
	srv, seen := serve(t, sseBytes([]byte(okStream)))
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/env")
	t.Setenv("OPENAI_ORG_ID", "org-env")
	t.Setenv("OPENAI_PROJECT_ID", "proj-env")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Env: yes")

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
			if r.Path != "/v1/chat/completions" {
				t.Errorf("request path = %q; want %q", r.Path, "/v1/chat/completions")
			}
			if got := r.Header.Get("Authorization"); got != tt.wantAuth {
				t.Errorf("Authorization = %q; want %q", got, tt.wantAuth)
			}
			for _, h := range []string{"OpenAI-Organization", "OpenAI-Project", "X-Env"} {
				if v := r.Header.Get(h); v != "" {
					t.Errorf("header %s = %q; want none (read from the environment)", h, v)
				}
			}
			if got := r.Header.Get("X-Custom"); got != "c" {
				t.Errorf("X-Custom = %q; want %q", got, "c")
			}
			if got := string(r.Body); got != `{"model":"m"}` {
				t.Errorf("request body = %q; want the body given, verbatim", got)
			}
			if got := r.Header.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type = %q; want application/json", got)
			}
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
	srv, seen := serve(t, reply(500, "application/json", `{"error":{"message":"x","type":"server_error"}}`, "retry-after-ms", "1"))
	o := stream(t, newAdapter(t, srv.URL+"/v1", Options{}), []byte(`{}`))
	if o.err == nil {
		t.Fatalf("Stream() error = nil; want SERVER")
	}
	if n := len(seen.all()); n != 1 {
		t.Errorf("server saw %d requests; want 1", n)
	}
}

package openaiwire_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaiwire"
	"github.com/turnstream/turnstream/internal/provider/providertest"
)

func newClient(t *testing.T, o openaiwire.Options) *openaiwire.Client {
	t.Helper()
	c, err := openaiwire.New(o)
	if err != nil {
		t.Fatalf("New(%+v) error = %v", o, err)
	}
	return c
}

// post runs c.Post with a deadline that only prevents a hang and closes
// the response at the end of the test.
func post(t *testing.T, c *openaiwire.Client, body string) (*openaiwire.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	res, err := c.Post(ctx, "chat/completions", []byte(body))
	if (res == nil) == (err == nil) {
		t.Fatalf("Post() = %v, %v; want exactly one of response and error", res, err)
	}
	if res != nil {
		t.Cleanup(func() { res.Close() })
	}
	return res, err
}

func TestNew(t *testing.T) {
	tests := []struct {
		base    string
		wantErr bool
	}{
		{"https://api.openai.com/v1", false},
		{"http://127.0.0.1:8080", false},
		{"", true},
		{"api.openai.com/v1", true},
		{"ftp://x", true},
		{"unix:///tmp/s", true},
	}
	for _, tt := range tests {
		t.Run(tt.base, func(t *testing.T) {
			c, err := openaiwire.New(openaiwire.Options{AdapterOptions: provider.AdapterOptions{BaseURL: tt.base}})
			if (err != nil) != tt.wantErr {
				t.Fatalf("New(BaseURL %q) error = %v; want error %v", tt.base, err, tt.wantErr)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "openaiwire: ") {
				t.Errorf("New(BaseURL %q) error = %q; want the openaiwire: prefix", tt.base, err)
			}
			if err == nil && c == nil {
				t.Errorf("New(BaseURL %q) = nil, nil; want a client", tt.base)
			}
		})
	}
}

// TestPostRequest: the body goes verbatim to the base URL plus the path,
// with exactly the key, headers and Accept given, and nothing from the
// environment.
func TestPostRequest(t *testing.T) {
	srv, seen := providertest.Serve(t, providertest.SSE([]byte("data: {}\n\n")))
	providertest.PoisonEnv(t)
	tests := []struct {
		name       string
		key        string
		accept     string
		wantAuth   string
		wantAccept string
	}{
		{"key, default accept", "sk-explicit", "", "Bearer sk-explicit", "text/event-stream"},
		{"no key, json", "", "application/json", "", "application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, openaiwire.Options{AdapterOptions: provider.AdapterOptions{BaseURL: srv.URL + "/v1", APIKey: tt.key, Headers: map[string]string{"X-Custom": "c"}}, Accept: tt.accept})
			r := seen.One(t, func() {
				if _, err := post(t, c, `{"model":"m"}`); err != nil {
					t.Fatalf("Post() error = %v; want nil", err)
				}
			})
			providertest.CheckRequest(t, r, providertest.WantRequest{
				Path: "/v1/chat/completions",
				Header: map[string]string{
					"Authorization": tt.wantAuth, "X-Custom": "c",
					"Accept": tt.wantAccept, "Content-Type": "application/json",
				},
				Body: `{"model":"m"}`,
			})
			providertest.CheckNoEnv(t, r)
		})
	}
}

// TestPostFailures: a request that got no answer is classified, with the
// status, request id and retry hint of an HTTP error, in one request.
func TestPostFailures(t *testing.T) {
	fixed := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	tests := []struct {
		name       string
		h          http.HandlerFunc
		idle       time.Duration
		class      provider.Class
		status     int
		retryAfter time.Duration
		requestID  string
	}{
		{
			name:  "429 retry-after date read against Now",
			h:     providertest.Reply(429, "application/json", `{"error":{"message":"Rate limit reached.","type":"requests","code":"rate_limit_exceeded"}}`, "retry-after", fixed.Add(7*time.Second).Format(http.TimeFormat), "x-request-id", "req_429"),
			class: provider.ClassRateLimit, status: 429, retryAfter: 7 * time.Second, requestID: "req_429",
		},
		{
			name:  "429 hint in the message",
			h:     providertest.Reply(429, "application/json", `{"error":{"message":"Please try again in 1.5s.","type":"requests","code":"rate_limit_exceeded"}}`),
			class: provider.ClassRateLimit, status: 429, retryAfter: 1500 * time.Millisecond,
		},
		{
			name:  "401",
			h:     providertest.Reply(401, "application/json", `{"error":{"message":"Incorrect API key provided: sk-test.","type":"invalid_request_error","code":"invalid_api_key"}}`),
			class: provider.ClassAuth, status: 401,
		},
		{
			name:  "500 with retry-after-ms",
			h:     providertest.Reply(500, "application/json", `{"error":{"message":"x","type":"server_error"}}`, "retry-after-ms", "1", "x-request-id", "req_500"),
			class: provider.ClassServer, status: 500, retryAfter: time.Millisecond, requestID: "req_500",
		},
		{
			name:  "502 with an HTML body",
			h:     providertest.Reply(502, "text/html", "<html>bad gateway</html>"),
			class: provider.ClassServer, status: 502,
		},
		{
			name:  "no response headers before the idle timeout",
			h:     func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
			idle:  50 * time.Millisecond,
			class: provider.ClassTimeout,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, seen := providertest.Serve(t, tt.h)
			c := newClient(t, openaiwire.Options{AdapterOptions: provider.AdapterOptions{BaseURL: srv.URL + "/v1", APIKey: "sk-test", IdleTimeout: tt.idle}, Now: func() time.Time { return fixed }})
			_, err := post(t, c, `{}`)
			f := providertest.CheckFailure(t, providertest.Outcome{Err: err}, provider.Failure{Class: tt.class, Status: tt.status, RetryAfter: tt.retryAfter, RequestID: tt.requestID})
			if msg := f.Error(); strings.Contains(msg, "sk-test") || strings.Contains(msg, "try again") {
				t.Errorf("Failure.Error() = %q; must not carry the provider's message", msg)
			}
			if n := len(seen.All()); n != 1 {
				t.Errorf("server saw %d requests; want 1 (the executor owns retries)", n)
			}
		})
	}
}

func TestPostConnectionRefused(t *testing.T) {
	srv, _ := providertest.Serve(t, providertest.SSE(nil))
	url := srv.URL
	srv.Close()
	_, err := post(t, newClient(t, openaiwire.Options{AdapterOptions: provider.AdapterOptions{BaseURL: url}}), `{}`)
	if f := provider.AsFailure(err); f == nil || f.Class != provider.ClassTransport {
		t.Errorf("Post() error = %v; want TRANSPORT", err)
	}
}

func TestPostCancelled(t *testing.T) {
	srv, _ := providertest.Serve(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res, err := newClient(t, openaiwire.Options{AdapterOptions: provider.AdapterOptions{BaseURL: srv.URL}}).Post(ctx, "x", []byte(`{}`))
	if f := provider.AsFailure(err); res != nil || f == nil || f.Class != provider.ClassCancelled {
		t.Errorf("Post() = %v, %v; want CANCELLED", res, err)
	}
}

// TestResponse: what an answer that got its headers reads as, and how its
// reading ends.
func TestResponse(t *testing.T) {
	tests := []struct {
		name   string
		h      http.HandlerFunc
		idle   time.Duration
		cancel bool           // the caller gives up after the first event
		stream bool           // EventStream()
		events []string       // type and data of each event, "type data"
		class  provider.Class // of Interrupted; empty: none
		reason string
	}{
		{
			name:   "events, a comment, a last event without its blank line",
			h:      providertest.SSE([]byte("data: a\n\n: keep-alive\n\nevent: error\ndata: b\ndata: c\n\ndata: [DONE]\n"), "Content-Type", "text/event-stream; charset=utf-8"),
			stream: true,
			events: []string{" a", "error b\nc", " [DONE]"},
		},
		{
			name:   "truncated mid-line",
			h:      providertest.SSE([]byte("data: a\n\ndata: [DO")),
			stream: true,
			events: []string{" a"},
		},
		{
			name:   "comments only",
			h:      providertest.KeepAlive(5 * time.Millisecond),
			idle:   50 * time.Millisecond,
			stream: true,
			class:  provider.ClassTimeout, reason: "stream idle timeout",
		},
		{
			name:   "stall after an event",
			h:      providertest.Stall("text/event-stream", "data: a\n\n"),
			idle:   50 * time.Millisecond,
			stream: true,
			events: []string{" a"},
			class:  provider.ClassTimeout, reason: "stream idle timeout",
		},
		{
			name:   "cut mid-stream",
			h:      providertest.Abort("text/event-stream", "data: a\n\n"),
			stream: true,
			events: []string{" a"},
			class:  provider.ClassTransport, reason: "stream broken",
		},
		{
			name:   "caller gives up",
			h:      providertest.Stall("text/event-stream", "data: a\n\n"),
			cancel: true,
			stream: true,
			events: []string{" a"},
			class:  provider.ClassCancelled,
		},
		{
			name: "JSON",
			h:    providertest.Reply(200, "application/json", `{"id":"x"}`),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := providertest.Serve(t, tt.h)
			c := newClient(t, openaiwire.Options{AdapterOptions: provider.AdapterOptions{BaseURL: srv.URL, IdleTimeout: tt.idle}})
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			res, err := c.Post(ctx, "x", []byte(`{}`))
			if err != nil {
				t.Fatalf("Post() error = %v", err)
			}
			defer res.Close()
			if got := res.EventStream(); got != tt.stream {
				t.Fatalf("EventStream() = %v; want %v", got, tt.stream)
			}
			if !tt.stream {
				return
			}
			var got []string
			events := res.Events()
			for events.Next() {
				ev := events.Event()
				got = append(got, ev.Type+" "+string(ev.Data))
				if tt.cancel {
					cancel()
				}
			}
			if strings.Join(got, "|") != strings.Join(tt.events, "|") {
				t.Errorf("Events() = %q; want %q", got, tt.events)
			}
			f := res.Interrupted(ctx, "stream", events.Err())
			switch {
			case tt.class == "" && f != nil:
				t.Errorf("Interrupted() = %v; want nil", f)
			case tt.class != "" && (f == nil || f.Class != tt.class || tt.reason != "" && f.Reason != tt.reason):
				t.Errorf("Interrupted() = %v; want %s %q", f, tt.class, tt.reason)
			}
		})
	}
}

// TestResponseClose: Close closes the body and ends the request.
func TestResponseClose(t *testing.T) {
	srv, _ := providertest.Serve(t, providertest.Stall("text/event-stream", "data: a\n\n"))
	res, err := post(t, newClient(t, openaiwire.Options{AdapterOptions: provider.AdapterOptions{BaseURL: srv.URL}}), `{}`)
	if err != nil {
		t.Fatalf("Post() error = %v", err)
	}
	if err := res.Close(); err != nil {
		t.Fatalf("Close() error = %v", err)
	}
	if _, err := res.HTTP.Body.Read(make([]byte, 1)); err == nil || errors.Is(err, io.EOF) {
		t.Errorf("Body.Read() after Close() error = %v; want a closed body", err)
	}
}

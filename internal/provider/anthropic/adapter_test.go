package anthropic

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/providertest"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestStreamFixtures serves Anthropic-shaped streams over HTTP through the
// real adapter.
func TestStreamFixtures(t *testing.T) {
	type call struct {
		id, name, args string
		complete       bool
	}
	tests := []struct {
		file       string
		class      provider.Class // empty: success
		text       string
		reasoning  string
		calls      []call
		executable bool
		finish     string
		rawFinish  string
		usage      *wire.Usage
		echo       string
	}{
		{
			file:  "text_then_tool_use.sse",
			text:  "Okay, let me check the weather.",
			calls: []call{{"toolu_01T1x1fJ34qAmk2tNTrN7Up6", "get_weather", `{"location": "San Francisco, CA", "unit": "fahrenheit"}`, true}}, executable: true,
			finish: wire.FinishToolCalls, rawFinish: "tool_use",
			usage: &wire.Usage{InputTokens: 472, OutputTokens: 89},
		},
		{
			file: "parallel_tool_use.sse",
			calls: []call{
				{"toolu_01A09q90qw90lq917835lq9", "get_weather", `{"city": "Paris"}`, true},
				{"toolu_01B19r91rx91mr928946mr0", "get_weather", `{"city": "Tokyo\u00e9"}`, true},
			},
			executable: true, finish: wire.FinishToolCalls, rawFinish: "tool_use",
			usage: &wire.Usage{InputTokens: 600, OutputTokens: 112},
		},
		{
			file:      "thinking_signed.sse",
			reasoning: "Let me solve this step by step:\n\n1. 27 * 453 = 27 * 400 + 27 * 53 = 10800 + 1431 = 12231",
			text:      "27 * 453 = 12,231",
			finish:    wire.FinishStop, rawFinish: "end_turn",
			usage: &wire.Usage{InputTokens: 38, OutputTokens: 96, ReasoningTokens: 71},
			echo:  `[{"signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds9kC4gmhM1bgLo0LKw7tmLaw","thinking":"Let me solve this step by step:\n\n1. 27 * 453 = 27 * 400 + 27 * 53 = 10800 + 1431 = 12231","type":"thinking"}]`,
		},
		{
			file:       "redacted_thinking_tool_use.sse",
			reasoning:  "I need the file first.",
			calls:      []call{{"toolu_01VxqB3ymqfcLd1ydz9LKGT1", "read_file", `{"path": "src/main.go"}`, true}},
			executable: true, finish: wire.FinishToolCalls, rawFinish: "tool_use",
			usage: &wire.Usage{InputTokens: 210, OutputTokens: 140},
			echo: `[{"data":"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB8URj2pLmDBgEHBw","type":"redacted_thinking"},` +
				`{"signature":"ErUBCkYIBBgCIkDGmgPUZ","thinking":"I need the file first.","type":"thinking"}]`,
		},
		{
			// The call being written when the tokens ran out is incomplete.
			file:   "max_tokens_mid_tool_use.sse",
			text:   "I'll write the file.",
			calls:  []call{{"toolu_01Dq2H2pGmWcU8y9E1rR7oXa", "write_file", `{"path": "notes.md", "content": "# No`, false}},
			finish: wire.FinishLength, rawFinish: "max_tokens",
			usage: &wire.Usage{InputTokens: 350, OutputTokens: 64},
		},
		{
			// Its arguments parse ({}), yet it was cut: never executable.
			file:   "max_tokens_at_tool_start.sse",
			calls:  []call{{"toolu_01Rz5xXb2bYq8d4Nc7Kf3Tq1", "delete_branch", `{}`, false}},
			finish: wire.FinishLength, rawFinish: "max_tokens",
			usage: &wire.Usage{InputTokens: 350, OutputTokens: 16},
		},
		{
			file: "refusal.sse", text: "I can't help with",
			finish: wire.FinishContentFilter, rawFinish: "refusal",
			usage: &wire.Usage{InputTokens: 20, OutputTokens: 5},
		},
		{
			// input_tokens excludes both cache buckets: cache writes are
			// uncached input, cache reads the cached bucket, each once.
			file: "cache_usage.sse", text: "Cached.",
			finish: wire.FinishStop, rawFinish: "end_turn",
			usage: &wire.Usage{InputTokens: 12 + 2048, CachedInputTokens: 1024, OutputTokens: 7},
		},
		{
			// A hostile count: the buckets' sum saturates rather than
			// wrapping negative, a negative count is 0.
			file: "huge_usage.sse", text: "Counted.",
			finish: wire.FinishStop, rawFinish: "end_turn",
			usage: &wire.Usage{InputTokens: math.MaxInt64},
		},
		{
			file: "stop_sequence.sse", text: "one, two",
			finish: wire.FinishStop, rawFinish: "stop_sequence",
			usage: &wire.Usage{InputTokens: 9, OutputTokens: 4},
		},
		{
			file:  "input_in_start.sse",
			calls: []call{{"toolu_bdrk_01Mn4", "search", `{"query": "parser"}`, true}}, executable: true,
			finish: wire.FinishToolCalls, rawFinish: "tool_use",
			usage: &wire.Usage{InputTokens: 80, OutputTokens: 30},
		},
		{
			// Server tool blocks, citations and unknown events are relayed
			// and ignored.
			file: "server_tool_blocks.sse", text: "It is sunny.",
			finish: wire.FinishStop, rawFinish: "end_turn",
			usage: &wire.Usage{InputTokens: 2679, OutputTokens: 20},
		},
		{file: "overloaded_mid_stream.sse", class: provider.ClassServer},
		{file: "no_message_stop.sse", class: provider.ClassStreamClosed},
		{file: "malformed_event.sse", class: provider.ClassMalformed},
		{file: "empty_end_turn.sse", class: provider.ClassEmpty},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			body := fixture(t, tt.file)
			srv, _ := providertest.Serve(t, sse(body))
			o := providertest.Stream(t, newAdapter(t, srv.URL, Options{}), []byte(`{}`))

			// Every event is relayed as it arrived, byte for byte, pings too.
			events := providertest.CheckRelayed(t, o.Frames, body)
			if tt.class != "" {
				f := o.Failure()
				if f == nil || f.Class != tt.class {
					t.Fatalf("Stream() = %+v, %v; want failure %s", o.Resp, o.Err, tt.class)
				}
				if f.RequestID != requestID {
					t.Errorf("failure RequestID = %q; want %q", f.RequestID, requestID)
				}
				return
			}
			if len(o.Frames) != events {
				t.Errorf("Stream() relayed %d frames; want every one of %d", len(o.Frames), events)
			}
			r := providertest.CheckResponse(t, o, providertest.WantResponse{
				Text: tt.text, Reasoning: tt.reasoning, Finish: tt.finish, RawFinish: tt.rawFinish, Usage: tt.usage,
			})
			if r.Echo != tt.echo {
				t.Errorf("echo = %s; want %s", r.Echo, tt.echo)
			}
			var got []call
			for _, c := range r.ToolCalls {
				got = append(got, call{c.ProviderID, c.Name, c.Arguments, c.Complete})
			}
			if !reflect.DeepEqual(got, tt.calls) {
				t.Errorf("calls = %+v; want %+v", got, tt.calls)
			}
			if len(tt.calls) > 0 && r.Executable() != tt.executable {
				t.Errorf("Executable() = %v; want %v", r.Executable(), tt.executable)
			}
			if !strings.HasPrefix(r.ResponseID, "msg_") {
				t.Errorf("ResponseID = %q; want the message id", r.ResponseID)
			}
			// Reasoning and replay state never reach a delta.
			for i, f := range o.Frames {
				d := f.Delta
				if d == nil {
					continue
				}
				visible := d.Text
				for _, tc := range d.ToolCalls {
					visible += tc.Arguments
				}
				for _, secret := range []string{"EqQBCgIYAh", "EmwKAhgB", "ErUBCkYIBBgC", "step by step", "need the file"} {
					if strings.Contains(visible, secret) {
						t.Errorf("frame %d delta carries reasoning or replay state %q", i, secret)
					}
				}
			}
		})
	}
}

// anthropicError is an Anthropic error body.
func anthropicError(typ, message string) string {
	return fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":%q},"request_id":%q}`, typ, message, requestID)
}

func TestHTTPErrors(t *testing.T) {
	huge := anthropicError("invalid_request_error", strings.Repeat("x", 2048))
	tests := []struct {
		name   string
		h      http.HandlerFunc
		limits provider.Limits
		want   provider.Failure
	}{
		{"529 overloaded", reply(529, anthropicError("overloaded_error", "Overloaded"), "request-id", requestID),
			provider.Limits{}, provider.Failure{Class: provider.ClassServer, Status: 529, RequestID: requestID}},
		{"429 rate limit with retry-after", reply(429, anthropicError("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"), "retry-after", "12", "request-id", requestID),
			provider.Limits{}, provider.Failure{Class: provider.ClassRateLimit, Status: 429, RetryAfter: 12 * time.Second, RequestID: requestID}},
		{"401 authentication", reply(401, anthropicError("authentication_error", "invalid x-api-key")),
			provider.Limits{}, provider.Failure{Class: provider.ClassAuth, Status: 401}},
		{"403 permission", reply(403, anthropicError("permission_error", "Your API key does not have permission to use the specified resource.")),
			provider.Limits{}, provider.Failure{Class: provider.ClassAuth, Status: 403}},
		{"400 invalid request", reply(400, anthropicError("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum")),
			provider.Limits{}, provider.Failure{Class: provider.ClassInvalidRequest, Status: 400}},
		{"400 credit balance", reply(400, anthropicError("invalid_request_error", "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.")),
			provider.Limits{}, provider.Failure{Class: provider.ClassQuota, Status: 400}},
		{"404 model", reply(404, anthropicError("not_found_error", "model: claude-nope")),
			provider.Limits{}, provider.Failure{Class: provider.ClassInvalidRequest, Status: 404}},
		{"413 request too large", reply(413, anthropicError("request_too_large", "Request exceeds the maximum allowed number of bytes.")),
			provider.Limits{}, provider.Failure{Class: provider.ClassTooLarge, Status: 413}},
		{"500 api error", reply(500, anthropicError("api_error", "Internal server error"), "request-id", requestID),
			provider.Limits{}, provider.Failure{Class: provider.ClassServer, Status: 500, RequestID: requestID}},
		// An error body past MaxEventBytes is not read: its status classifies it.
		{"error body over its limit", reply(429, huge), provider.Limits{MaxEventBytes: 1024},
			provider.Failure{Class: provider.ClassRateLimit, Status: 429}},
		{"200 error object", reply(200, anthropicError("overloaded_error", "Overloaded"), "request-id", requestID),
			provider.Limits{}, provider.Failure{Class: provider.ClassServer, Status: 200, RequestID: requestID}},
		{"200 not a stream", reply(200, `{"id":"msg_1","type":"message","content":[]}`),
			provider.Limits{}, provider.Failure{Class: provider.ClassMalformed, Status: 200}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, rec := providertest.Serve(t, tt.h)
			a := newAdapter(t, srv.URL, Options{})
			ctx := provider.WithLimits(t.Context(), tt.limits)
			var o providertest.Outcome
			rec.One(t, func() { o.Resp, o.Err = a.Stream(ctx, []byte(`{}`), providertest.Record(&o.Frames)) })
			providertest.CheckFailure(t, o, tt.want)
			if len(o.Frames) != 0 {
				t.Errorf("Stream() relayed %d frames of an error answer", len(o.Frames))
			}
		})
	}
}

// TestInBandErrorTypes: every documented error type an error event can
// carry gets its class; overloaded_error is retried as SERVER.
func TestInBandErrorTypes(t *testing.T) {
	tests := []struct {
		typ, message string
		want         provider.Class
		retryAfter   time.Duration
	}{
		{"overloaded_error", "Overloaded", provider.ClassServer, 0},
		{"api_error", "Internal server error", provider.ClassServer, 0},
		{"rate_limit_error", "Rate limited. Please try again in 2s.", provider.ClassRateLimit, 2 * time.Second},
		{"authentication_error", "invalid x-api-key", provider.ClassAuth, 0},
		{"permission_error", "not allowed", provider.ClassAuth, 0},
		{"billing_error", "billing issue", provider.ClassQuota, 0},
		{"invalid_request_error", "bad", provider.ClassInvalidRequest, 0},
		{"not_found_error", "model not found", provider.ClassInvalidRequest, 0},
		{"request_too_large", "too large", provider.ClassTooLarge, 0},
		{"timeout_error", "Request timed out", provider.ClassTimeout, 0},
		{"something_new_error", "?", provider.ClassServer, 0},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			tr := NewTranslator()
			progress, err := tr.Event("error", []byte(anthropicError(tt.typ, tt.message)))
			f := provider.AsFailure(err)
			if !progress || f == nil || f.Class != tt.want || f.RetryAfter != tt.retryAfter {
				t.Errorf("Event(error %s) = %v, %v; want progress and %s (retry after %v)", tt.typ, progress, f, tt.want, tt.retryAfter)
			}
			if f != nil && strings.Contains(f.Error(), tt.message) {
				t.Errorf("failure %q carries the provider's message", f.Error())
			}
		})
	}
}

// TestRequest: the SDK sends the prepared body verbatim to
// BaseURL/v1/messages with the configured key and headers, nothing read
// from the environment, and no retry of its own.
func TestRequest(t *testing.T) {
	providertest.PoisonEnv(t)
	for _, suffix := range []string{"", "/", "/v1", "/v1/"} {
		t.Run("base URL"+suffix, func(t *testing.T) {
			srv, rec := providertest.Serve(t, reply(500, anthropicError("api_error", "boom")))
			a := newAdapter(t, srv.URL+suffix, Options{APIKey: "sk-ant-configured", Headers: map[string]string{"anthropic-beta": "interleaved-thinking-2025-05-14"}})
			body := []byte(`{"model":"claude-haiku-4-5","max_tokens":16,"messages":[],"stream":true}`)
			r := rec.One(t, func() { providertest.Stream(t, a, body) })
			providertest.CheckRequest(t, r, providertest.WantRequest{
				Path: "/v1/messages",
				Header: map[string]string{
					"Authorization": "Bearer sk-ant-configured", "Anthropic-Beta": "interleaved-thinking-2025-05-14",
					"Content-Type": "application/json", "Accept": "text/event-stream",
				},
				Body: string(body),
			})
			if r.Header.Get("Anthropic-Version") == "" {
				t.Errorf("request has no anthropic-version header")
			}
			providertest.CheckNoEnv(t, r)
		})
	}
}

func TestNoKeySendsNone(t *testing.T) {
	srv, rec := providertest.Serve(t, sse(fixture(t, "stop_sequence.sse")))
	a, err := New(Options{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	r := rec.One(t, func() { providertest.Stream(t, a, []byte(`{}`)) })
	if v := r.Header.Get("X-Api-Key") + r.Header.Get("Authorization"); v != "" {
		t.Errorf("credentials sent without a key: %q", v)
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		o  Options
		ok bool
	}{
		{Options{}, true},
		{Options{BaseURL: "https://api.anthropic.com"}, true},
		{Options{BaseURL: "api.anthropic.com"}, false},
		{Options{IdleTimeout: -time.Second}, false},
		{Options{MaxTokens: -1}, false},
		{Options{ThinkingBudget: 1024}, true},
		{Options{ThinkingBudget: 1023}, false},
		{Options{ThinkingBudget: 4096}, false},
		{Options{ThinkingBudget: 4096, MaxTokens: 16000}, true},
		{Options{ThinkingBudget: -1}, false},
	}
	for _, tt := range tests {
		if err := validate(tt.o); (err == nil) != tt.ok {
			t.Errorf("%+v.Validate() = %v; want ok %v", tt.o, err, tt.ok)
		}
		if _, err := New(tt.o); (err == nil) != tt.ok {
			t.Errorf("New(%+v) error = %v; want ok %v", tt.o, err, tt.ok)
		}
	}
}

// TestPingIsNotProgress: a stream that sends only pings after its start
// ends at the idle timeout, every ping relayed.
func TestPingIsNotProgress(t *testing.T) {
	start := `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"usage":{"input_tokens":1,"output_tokens":1}}}`
	srv, _ := providertest.Serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprintf(w, "event: message_start\ndata: %s\n\n", start)
		for {
			if _, err := fmt.Fprint(w, "event: ping\ndata: {\"type\": \"ping\"}\n\n"); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	o := providertest.Stream(t, newAdapter(t, srv.URL, Options{IdleTimeout: 200 * time.Millisecond}), []byte(`{}`))
	providertest.CheckFailure(t, o, provider.Failure{Class: provider.ClassTimeout})
	if len(o.Frames) < 2 || o.Frames[1].Event != "ping" {
		t.Errorf("frames = %d; want message_start and the pings relayed", len(o.Frames))
	}
}

// TestStreamLimits: the bounded reader under the SDK's decoder fails the
// attempt before a line, an event or the stream passes its limit.
func TestStreamLimits(t *testing.T) {
	long := `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + strings.Repeat("a", 600) + `"}}`
	start := "event: message_start\ndata: " + `{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":1,"output_tokens":1}}}` + "\n\n"
	tests := []struct {
		name   string
		body   string
		limits provider.Limits
		reason string
	}{
		{"line", start + "data: " + long + "\n\n", provider.Limits{MaxLineBytes: 512}, provider.LimitLineBytes},
		{"event", start + "data: " + long[:300] + "\ndata: " + long[300:] + "\n\n", provider.Limits{MaxEventBytes: 512}, provider.LimitEventBytes},
		{"stream", start + strings.Repeat("event: ping\ndata: {\"type\": \"ping\"}\n\n", 40), provider.Limits{MaxStreamBytes: 1024}, provider.LimitStreamBytes},
		{"text", start + "data: " + long + "\n\n", provider.Limits{MaxTextBytes: 100}, provider.LimitTextBytes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := providertest.Serve(t, sse([]byte(tt.body)))
			a := newAdapter(t, srv.URL, Options{})
			ctx, cancel := context.WithTimeout(provider.WithLimits(t.Context(), tt.limits), 10*time.Second)
			defer cancel()
			var frames []provider.Frame
			_, err := a.Stream(ctx, []byte(`{}`), providertest.Record(&frames))
			f := provider.AsFailure(err)
			if f == nil || f.Class != provider.ClassResponseTooLarge || f.Reason != tt.reason {
				t.Fatalf("Stream() error = %v; want RESPONSE_TOO_LARGE %s", err, tt.reason)
			}
			for _, fr := range frames {
				if bytes.Contains(fr.Raw, []byte("aaaa")) {
					t.Errorf("the frame that crossed a limit was relayed")
				}
			}
		})
	}
}

package deepseek

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/providertest"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestStreamFixtures serves DeepSeek-shaped streams over HTTP through the
// real adapter.
func TestStreamFixtures(t *testing.T) {
	type call struct{ id, name, args string }
	tests := []struct {
		file      string
		class     provider.Class // empty: success
		text      string
		reasoning string
		calls     []call
		finish    string
		rawFinish string
		usage     *wire.Usage
	}{
		{
			file:      "thinking_tool_call.sse",
			reasoning: "The user wants the weather in Paris and Tokyo. I will call get_weather twice.",
			calls: []call{
				{"call_00_ZbU2cV6cZtc5Dw8qkSPY7ZOX", "get_weather", `{"city": "Paris"}`},
				{"call_01_Qm4hT9xLw2Rk7Vb3Np8sJd5F", "get_weather", `{"city": "Tokyo\u00e9"}`},
			},
			finish: wire.FinishToolCalls, rawFinish: "tool_calls",
			// prompt_tokens 1200 include 1024 cache hits.
			usage: &wire.Usage{InputTokens: 176, CachedInputTokens: 1024, OutputTokens: 85, ReasoningTokens: 40},
		},
		{
			file:      "plain_answer_reasoning.sse",
			text:      "The answer is 42.",
			reasoning: "Six times seven is forty-two.",
			finish:    wire.FinishStop, rawFinish: "stop",
			usage: &wire.Usage{InputTokens: 44, CachedInputTokens: 256, OutputTokens: 31, ReasoningTokens: 12},
		},
		{
			file:   "keep_alive_queued.sse",
			text:   "Hello from the queue.",
			finish: wire.FinishStop, rawFinish: "stop",
			usage: &wire.Usage{InputTokens: 12, OutputTokens: 5},
		},
		{
			file:   "insufficient_system_resource.sse",
			text:   "Partial ans",
			finish: wire.FinishIncomplete, rawFinish: "insufficient_system_resource",
			usage: &wire.Usage{InputTokens: 40, OutputTokens: 3},
		},
		{
			file:      "length_in_reasoning.sse",
			reasoning: "Let me think about this very carefully, step by",
			finish:    wire.FinishLength, rawFinish: "length",
			usage: &wire.Usage{InputTokens: 20, OutputTokens: 16, ReasoningTokens: 16},
		},
		{file: "malformed_chunk.sse", class: provider.ClassMalformed},
		{file: "no_done.sse", class: provider.ClassStreamClosed},
		{file: "empty_stop.sse", class: provider.ClassEmpty},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			body := fixture(t, tt.file)
			srv, _ := providertest.Serve(t, sse(body))
			o := providertest.Stream(t, newAdapter(t, srv.URL, Options{}), []byte(`{}`))

			// Every frame is relayed as it arrived, byte for byte.
			events := providertest.CheckRelayed(t, o.Frames, body)
			if tt.class != "" {
				f := o.Failure()
				if f == nil || f.Class != tt.class {
					t.Fatalf("Stream() error = %v; want %s", o.Err, tt.class)
				}
				if f.RequestID != traceID {
					t.Errorf("Failure.RequestID = %q; want the x-ds-trace-id %q", f.RequestID, traceID)
				}
				if got := o.DeltaText(); strings.Contains(got, "Thinking") {
					t.Errorf("relayed text = %q; reasoning must never be a visible delta", got)
				}
				return
			}
			if len(o.Frames) != events {
				t.Errorf("Stream() relayed %d frames; want %d", len(o.Frames), events)
			}
			r := providertest.CheckResponse(t, o, providertest.WantResponse{
				Text: tt.text, Reasoning: tt.reasoning, Finish: tt.finish, RawFinish: tt.rawFinish, Usage: tt.usage,
			})
			var calls []call
			for _, c := range r.ToolCalls {
				calls = append(calls, call{c.ProviderID, c.Name, c.Arguments})
			}
			if !reflect.DeepEqual(calls, tt.calls) {
				t.Errorf("Stream() tool calls = %q; want %q", calls, tt.calls)
			}
			if !r.Executable() {
				t.Errorf("Stream() response not executable: %+v", r)
			}
			checkTerminalFrame(t, o, r)
		})
	}
}

// checkTerminalFrame: the literal [DONE] is the frame that ends the blocks
// and carries the final finish and usage, and no earlier frame does.
func checkTerminalFrame(t *testing.T, o providertest.Outcome, r *assemble.Response) {
	t.Helper()
	last := o.Frames[len(o.Frames)-1]
	if string(last.Raw) != "[DONE]" {
		t.Fatalf("last frame Raw = %q; want [DONE]", last.Raw)
	}
	if last.Delta == nil || last.Delta.FinishReason != r.FinishReason || !reflect.DeepEqual(last.Delta.Usage, r.Usage) {
		t.Errorf("[DONE] delta = %+v; want finish %q and usage %+v", last.Delta, r.FinishReason, r.Usage)
	}
	ends := 0
	if last.Delta != nil {
		for _, tc := range last.Delta.ToolCalls {
			if tc.End {
				ends++
			}
		}
	}
	if ends != len(r.ToolCalls) {
		t.Errorf("[DONE] delta ends %d tool calls; want %d", ends, len(r.ToolCalls))
	}
	for i, f := range o.Frames[:len(o.Frames)-1] {
		if f.Delta == nil {
			continue
		}
		if f.Delta.FinishReason != "" || f.Delta.Usage != nil {
			t.Errorf("frame %d delta = %+v; finish and usage come only with [DONE]", i, f.Delta)
		}
		for _, tc := range f.Delta.ToolCalls {
			if tc.End {
				t.Errorf("frame %d ends tool call %d before [DONE]", i, tc.Index)
			}
		}
	}
}

// TestNonStreamedCompletion: a chat.completion body (a server or proxy
// that ignored stream: true) is read through openaichat's translator with
// DeepSeek's rules: reasoning_content is reasoning, never a visible delta,
// and cache hits are subtracted from the prompt total.
func TestNonStreamedCompletion(t *testing.T) {
	const body = `{"id":"5f0c6a8e-1b2d-4c3e-9f4a-7b8c9d0e1f2a","object":"chat.completion","created":1767225600,"model":"deepseek-reasoner",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"The answer is 42.","reasoning_content":"Six times seven is forty-two."},"logprobs":null,"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":300,"completion_tokens":31,"total_tokens":331,"prompt_tokens_details":{"cached_tokens":256},"completion_tokens_details":{"reasoning_tokens":12},"prompt_cache_hit_tokens":256,"prompt_cache_miss_tokens":44},"system_fingerprint":"fp_ds"}`
	srv, _ := providertest.Serve(t, reply(200, body, "x-ds-trace-id", traceID))
	o := providertest.Stream(t, newAdapter(t, srv.URL, Options{}), []byte(`{}`))
	if o.Err != nil {
		t.Fatalf("Stream() error = %v; want a response", o.Err)
	}
	r := o.Resp
	want := &wire.Usage{InputTokens: 44, CachedInputTokens: 256, OutputTokens: 31, ReasoningTokens: 12}
	if r.Text != "The answer is 42." || r.Reasoning != "Six times seven is forty-two." || r.FinishReason != wire.FinishStop || !reflect.DeepEqual(r.Usage, want) {
		t.Errorf("Stream() = text %q reasoning %q finish %q usage %+v; want %q %q stop %+v",
			r.Text, r.Reasoning, r.FinishReason, r.Usage, "The answer is 42.", "Six times seven is forty-two.", want)
	}
	if len(o.Frames) != 1 || string(o.Frames[0].Raw) != body || o.DeltaText() != r.Text {
		t.Errorf("Stream() relayed %d frames, text %q; want the body as one frame with the visible text only", len(o.Frames), o.DeltaText())
	}
}

// TestStreamHTTPErrors: DeepSeek's documented error statuses, each with its
// x-ds-trace-id kept as the failure's request id.
func TestStreamHTTPErrors(t *testing.T) {
	const echoMissing = `{"error":{"message":"The reasoning_content in the thinking mode must be passed back to the API.","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}`
	tests := []struct {
		name      string
		status    int
		body      string
		class     provider.Class
		retryable bool
	}{
		{"reasoning_content not passed back", 400, echoMissing, provider.ClassInvalidRequest, false},
		{"invalid format", 400, `{"error":{"message":"Invalid request format","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}`, provider.ClassInvalidRequest, false},
		{"authentication fails", 401, `{"error":{"message":"Authentication Fails, Your api key: ****test is invalid","type":"authentication_error","param":null,"code":"invalid_request_error"}}`, provider.ClassAuth, false},
		{"insufficient balance", 402, `{"error":{"message":"Insufficient Balance","type":"unknown_error","param":null,"code":"invalid_request_error"}}`, provider.ClassPayment, false},
		{"invalid parameters", 422, `{"error":{"message":"Invalid parameters","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}`, provider.ClassInvalidRequest, false},
		{"rate limit reached", 429, `{"error":{"message":"Rate Limit Reached","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}}`, provider.ClassRateLimit, true},
		{"server error", 500, `{"error":{"message":"Server Error","type":"server_error","param":null,"code":"server_error"}}`, provider.ClassServer, true},
		{"server overloaded", 503, `{"error":{"message":"Server Overloaded","type":"server_error","param":null,"code":"server_busy"}}`, provider.ClassServer, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, got := providertest.Serve(t, reply(tt.status, tt.body, "x-ds-trace-id", traceID))
			o := providertest.Stream(t, newAdapter(t, srv.URL, Options{}), []byte(`{}`))
			f := o.Failure()
			if f == nil {
				t.Fatalf("Stream() = %+v; want failure %s", o.Resp, tt.class)
			}
			if f.Class != tt.class || f.Status != tt.status || f.RequestID != traceID {
				t.Errorf("Stream() failure = {%s %d %q}; want {%s %d %q}", f.Class, f.Status, f.RequestID, tt.class, tt.status, traceID)
			}
			if r := provider.DefaultRetryPolicy.Retryable(f.Class); r != tt.retryable {
				t.Errorf("DefaultRetryPolicy.Retryable(%s) = %v; want %v", f.Class, r, tt.retryable)
			}
			if n := len(got.All()); n != 1 {
				t.Errorf("server saw %d requests; want 1 (the executor owns retries)", n)
			}
			if msg := f.Error(); strings.Contains(msg, "reasoning_content") || strings.Contains(msg, "test") {
				t.Errorf("Failure.Error() = %q; must not carry the provider's message", msg)
			}
		})
	}
}

// TestStreamKeepAliveIsNotProgress: a request queued behind keep-alive
// comments, with no event, hits the idle timeout.
func TestStreamKeepAliveIsNotProgress(t *testing.T) {
	srv, _ := providertest.Serve(t, providertest.KeepAlive(5*time.Millisecond, "x-ds-trace-id", traceID))
	o := providertest.Stream(t, newAdapter(t, srv.URL, Options{IdleTimeout: 50 * time.Millisecond}), []byte(`{}`))
	f := o.Failure()
	if f == nil || f.Class != provider.ClassTimeout {
		t.Fatalf("Stream() error = %v; want TIMEOUT", o.Err)
	}
	if f.RequestID != traceID {
		t.Errorf("Failure.RequestID = %q; want %q", f.RequestID, traceID)
	}
	if len(o.Frames) != 0 {
		t.Errorf("Stream() relayed %d frames; comments are not frames", len(o.Frames))
	}
}

// TestStreamRequest: the body goes verbatim to BaseURL/chat/completions
// with the given key and headers.
func TestStreamRequest(t *testing.T) {
	srv, got := providertest.Serve(t, sse(fixture(t, "keep_alive_queued.sse")))
	providertest.PoisonEnv(t)
	a, err := New(Options{BaseURL: srv.URL, APIKey: "sk-explicit", Headers: map[string]string{"X-Custom": "c"}})
	if err != nil {
		t.Fatalf("New() error = %v", err)
	}
	body := []byte(`{"model":"deepseek-chat","messages":[]}`)
	r := got.One(t, func() {
		if o := providertest.Stream(t, a, body); o.Err != nil {
			t.Fatalf("Stream() error = %v; want nil", o.Err)
		}
	})
	providertest.CheckRequest(t, r, providertest.WantRequest{
		Path:   "/chat/completions",
		Header: map[string]string{"Authorization": "Bearer sk-explicit", "X-Custom": "c", "Content-Type": "application/json"},
		Body:   string(body),
	})
	providertest.CheckNoEnv(t, r)
}

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		o       Options
		wantErr bool
	}{
		{"default base URL", Options{}, false},
		{"https", Options{BaseURL: "https://api.deepseek.com", IdleTimeout: time.Second}, false},
		{"no scheme", Options{BaseURL: "api.deepseek.com"}, true},
		{"ftp", Options{BaseURL: "ftp://x"}, true},
		{"negative idle timeout", Options{BaseURL: "https://api.deepseek.com", IdleTimeout: -time.Second}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := New(tt.o)
			if (err != nil) != tt.wantErr {
				t.Fatalf("New(%+v) error = %v; want error %v", tt.o, err, tt.wantErr)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "deepseek: ") {
				t.Errorf("New(%+v) error = %q; want the deepseek: prefix", tt.o, err)
			}
			if err == nil && a == nil {
				t.Errorf("New(%+v) = nil, nil; want an adapter", tt.o)
			}
		})
	}
}

package openaichat

import (
	"context"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/providertest"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestNonStreaming: a server that ignores stream: true answers with one
// chat.completion; it is relayed as one frame and translated by the same
// rules as a stream.
func TestNonStreaming(t *testing.T) {
	const usage = `"usage":{"prompt_tokens":31,"completion_tokens":9,"total_tokens":40,"prompt_tokens_details":{"cached_tokens":16,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`
	const head = `{"id":"chatcmpl-nb1","object":"chat.completion","created":1767225600,"model":"gpt-4o-2024-08-06",`
	tests := []struct {
		name      string
		body      string
		limits    provider.Limits
		class     provider.Class // empty: success
		text      string
		reasoning string
		calls     []call
		finish    string
		raw       string
		usage     *wire.Usage
	}{
		{
			name: "text",
			body: head + `"choices":[{"index":0,"message":{"role":"assistant","content":"Hello there.","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],` + usage + `,"service_tier":"default","system_fingerprint":"fp_nb"}`,
			text: "Hello there.", finish: wire.FinishStop, raw: "stop", usage: u(15, 16, 9, 0),
		},
		{
			name: "refusal with content null",
			body: head + `"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I'm sorry, but I can't help with that.","annotations":[]},"logprobs":null,"finish_reason":"stop"}],` + usage + `}`,
			text: "I'm sorry, but I can't help with that.", finish: wire.FinishStop, raw: "stop", usage: u(15, 16, 9, 0),
		},
		{
			name:   "refusal over the text limit",
			body:   head + `"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I'm sorry, but I can't help with that."},"finish_reason":"stop"}]}`,
			limits: provider.Limits{MaxTextBytes: 37},
			class:  provider.ClassResponseTooLarge,
		},
		{
			name: "tool calls without index, content null",
			body: head + `"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null,"tool_calls":[` +
				`{"id":"call_a","type":"function","function":{"name":"get_time","arguments":"{\"tz\":\"UTC\"}"}},` +
				`{"id":"call_b","type":"function","function":{"name":"get_time","arguments":"{\"tz\":\"JST\"}"}}]},"finish_reason":"tool_calls"}],` + usage + `}`,
			calls:  []call{c("call_a", "get_time", `{"tz":"UTC"}`), c("call_b", "get_time", `{"tz":"JST"}`)},
			finish: wire.FinishToolCalls, raw: "tool_calls", usage: u(15, 16, 9, 0),
		},
		{
			name: "tool calls without index or id",
			body: head + `"choices":[{"index":0,"message":{"role":"assistant","content":"","tool_calls":[` +
				`{"type":"function","function":{"name":"add","arguments":"{\"a\":1}"}},{"type":"function","function":{"name":"add","arguments":"{\"a\":2}"}}]},"finish_reason":"stop"}]}`,
			calls:  []call{c("", "add", `{"a":1}`), c("", "add", `{"a":2}`)},
			finish: wire.FinishToolCalls, raw: "stop",
		},
		{
			name: "reasoning_content and inline think stay out of the text",
			body: head + `"choices":[{"index":0,"message":{"role":"assistant","reasoning_content":"Sum it.","content":"<think>Check.</think>4"},"finish_reason":"stop"}]}`,
			text: "4", reasoning: "Sum it.Check.", finish: wire.FinishStop, raw: "stop",
		},
		{name: "length", body: head + `"choices":[{"index":0,"message":{"role":"assistant","content":"The ans"},"finish_reason":"length"}]}`, text: "The ans", finish: wire.FinishLength, raw: "length"},
		{name: "empty stop", body: head + `"choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"stop"}]}`, class: provider.ClassEmpty},
		{name: "not a completion", body: `{"object":"list","data":[]}`, class: provider.ClassMalformed},
		{name: "a stream chunk, not a completion", body: `{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}`, class: provider.ClassMalformed},
		{name: "truncated JSON", body: head + `"choices":[{"index":0,"message":{"role":"assistant","content":"x"`, class: provider.ClassMalformed},
		{name: "error object", body: `{"error":{"message":"overloaded","type":"server_error","code":null}}`, class: provider.ClassServer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := providertest.Serve(t, providertest.Reply(200, "application/json", tt.body, "x-request-id", "req_body"))
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			var o providertest.Outcome
			o.Resp, o.Err = newAdapter(t, srv.URL+"/v1", Options{}).Stream(provider.WithLimits(ctx, tt.limits), []byte(`{}`), providertest.Record(&o.Frames))
			if tt.class != "" {
				// EMPTY is a verdict on the response, not on the answer: it
				// carries no status, as from a stream.
				f := o.Failure()
				if f == nil || f.Class != tt.class || f.RequestID != "req_body" || f.Status != 200 && tt.class != provider.ClassEmpty {
					t.Fatalf("Stream() = %+v, %v; want failure %s with status 200 and request id req_body", o.Resp, o.Err, tt.class)
				}
				return
			}
			if o.Err != nil {
				t.Fatalf("Stream() error = %v; want a response", o.Err)
			}
			checkResponse(t, o, fixtureWant{text: tt.text, reasoning: tt.reasoning, calls: tt.calls, finish: tt.finish, raw: tt.raw, usage: tt.usage})
			if len(o.Frames) != 1 || string(o.Frames[0].Raw) != tt.body {
				t.Errorf("relayed %d frames; want the body as one", len(o.Frames))
			}
		})
	}
}

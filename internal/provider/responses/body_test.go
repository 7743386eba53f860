package responses

import (
	"bytes"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/providertest"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestNonStreaming: a JSON response is relayed as one frame and translated
// by the same rules as a stream.
func TestNonStreaming(t *testing.T) {
	const usage = `"usage":{"input_tokens":50,"input_tokens_details":{"cached_tokens":20},"output_tokens":30,"output_tokens_details":{"reasoning_tokens":12},"total_tokens":80}`
	tests := []struct {
		name      string
		body      string
		class     provider.Class
		text      string
		reasoning string
		calls     []wantCall
		finish    string
		raw       string
		usage     *wire.Usage
	}{
		{
			name: "completed text",
			body: `{"id":"resp_1","object":"response","status":"completed","error":null,"incomplete_details":null,"output":[` +
				`{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Plan."},{"type":"summary_text","text":"Check."}],"encrypted_content":"gAAAA-1"},` +
				`{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hello ","annotations":[]},{"type":"output_text","text":"world.","annotations":[]}]}],` + usage + `}`,
			text: "Hello world.", reasoning: "Plan.\n\nCheck.", finish: wire.FinishStop, raw: "completed",
			usage: &wire.Usage{InputTokens: 30, CachedInputTokens: 20, OutputTokens: 30, ReasoningTokens: 12},
		},
		{
			name: "tool calls",
			body: `{"id":"resp_2","status":"completed","output":[` +
				`{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"output_text","text":"Checking."}]},` +
				`{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_a","name":"get_time","arguments":"{\"tz\":\"UTC\"}"},` +
				`{"id":"ws_1","type":"web_search_call","status":"completed","action":{"type":"search"}},` +
				`{"id":"fc_2","type":"function_call","status":"completed","call_id":"call_b","name":"now","arguments":""}],` + usage + `}`,
			text:   "Checking.",
			calls:  []wantCall{{"call_a", "get_time", `{"tz":"UTC"}`}, {"call_b", "now", `{}`}},
			finish: wire.FinishToolCalls, raw: "completed",
			usage: &wire.Usage{InputTokens: 30, CachedInputTokens: 20, OutputTokens: 30, ReasoningTokens: 12},
		},
		{
			name: "incomplete max_output_tokens",
			body: `{"id":"resp_3","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[` +
				`{"id":"msg_1","type":"message","status":"incomplete","role":"assistant","content":[{"type":"output_text","text":"The ans"}]}],` + usage + `}`,
			text: "The ans", finish: wire.FinishLength, raw: "max_output_tokens",
			usage: &wire.Usage{InputTokens: 30, CachedInputTokens: 20, OutputTokens: 30, ReasoningTokens: 12},
		},
		{
			name:   "incomplete inside reasoning: nothing visible is not EMPTY",
			body:   `{"id":"resp_4","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"id":"rs_1","type":"reasoning","summary":[]}]}`,
			finish: wire.FinishLength, raw: "max_output_tokens",
		},
		{
			name: "incomplete content_filter",
			body: `{"id":"resp_5","status":"incomplete","incomplete_details":{"reason":"content_filter"},"output":[{"type":"message","content":[{"type":"output_text","text":"I"}]}]}`,
			text: "I", finish: wire.FinishContentFilter, raw: "content_filter",
		},
		{
			name: "refusal",
			body: `{"id":"resp_6","status":"completed","output":[{"type":"message","content":[{"type":"refusal","refusal":"I can't."}]}]}`,
			text: "I can't.", finish: wire.FinishStop, raw: "completed",
		},
		{name: "failed", body: `{"id":"resp_7","status":"failed","error":{"code":"server_error","message":"boom"},"output":[]}`, class: provider.ClassServer},
		{name: "failed on a rate limit", body: `{"id":"r","status":"failed","error":{"code":"rate_limit_exceeded","message":"slow"}}`, class: provider.ClassRateLimit},
		{name: "completed with nothing", body: `{"id":"resp_8","status":"completed","output":[]}`, class: provider.ClassEmpty},
		{name: "still in progress", body: `{"id":"resp_9","status":"in_progress","output":[]}`, class: provider.ClassMalformed},
		{name: "error object", body: `{"error":{"message":"overloaded","type":"server_error","code":null}}`, class: provider.ClassServer},
		{name: "not a response", body: `{"object":"list","data":[]}`, class: provider.ClassMalformed},
		{name: "truncated JSON", body: `{"id":"resp","status":"completed","output":[`, class: provider.ClassMalformed},
		{name: "item of the wrong shape", body: `{"id":"r","status":"completed","output":[{"type":"message","content":"text"}]}`, class: provider.ClassMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, seen := providertest.Serve(t, providertest.Reply(http.StatusOK, "application/json", tt.body, "x-request-id", "req_json"))
			o := providertest.Stream(t, newAdapter(t, srv.URL+"/v1", Options{}), []byte(`{"stream":false}`))
			if len(o.Frames) != 1 || !bytes.Equal(o.Frames[0].Raw, []byte(tt.body)) || o.Frames[0].Event != "" {
				t.Fatalf("relayed %d frames; want one with the body verbatim", len(o.Frames))
			}
			if got := seen.All()[0].Header.Get("Accept"); got != "application/json" {
				t.Errorf("Accept = %q; want application/json", got)
			}
			if tt.class != "" {
				if f := o.Failure(); f == nil || f.Class != tt.class || f.RequestID != "req_json" {
					t.Fatalf("Stream() = %+v, %v; want %s with request id req_json", o.Resp, o.Err, tt.class)
				}
				return
			}
			if o.Err != nil {
				t.Fatalf("Stream() error = %v", o.Err)
			}
			r := o.Resp
			if r.Text != tt.text || r.Reasoning != tt.reasoning || r.FinishReason != tt.finish || r.RawFinishReason != tt.raw {
				t.Errorf("Stream() = %q %q %s (%s); want %q %q %s (%s)", r.Text, r.Reasoning, r.FinishReason, r.RawFinishReason, tt.text, tt.reasoning, tt.finish, tt.raw)
			}
			if !reflect.DeepEqual(r.Usage, tt.usage) {
				t.Errorf("Stream() usage = %+v; want %+v", r.Usage, tt.usage)
			}
			var calls []wantCall
			for _, c := range r.ToolCalls {
				calls = append(calls, wantCall{c.ProviderID, c.Name, c.Arguments})
			}
			if !reflect.DeepEqual(calls, tt.calls) || !r.Executable() || !r.Terminal || !strings.HasPrefix(r.ResponseID, "resp_") {
				t.Errorf("Stream() calls = %q executable %v id %q; want %q, executable, resp_...", calls, r.Executable(), r.ResponseID, tt.calls)
			}
			d := o.Frames[0].Delta
			if d == nil || d.Text != r.Text || d.FinishReason != r.FinishReason || !reflect.DeepEqual(d.Usage, r.Usage) || len(d.ToolCalls) < len(r.ToolCalls) {
				t.Errorf("frame delta = %+v; want the whole response", d)
			}
		})
	}
}

// TestNonStreamingSameAsStream: a stream fixture and the response its
// terminal event carries assemble to the same result.
func TestNonStreamingSameAsStream(t *testing.T) {
	for _, file := range []string{"parallel_calls_interleaved.sse", "text_and_calls.sse", "reasoning_encrypted.sse", "incomplete_max_output_tokens.sse"} {
		t.Run(file, func(t *testing.T) {
			body := fixture(t, file)
			events := providertest.SplitSSE(body)
			last := events[len(events)-1].Data
			i := bytes.Index(last, []byte(`"response":`))
			whole := bytes.TrimSuffix(last[i+len(`"response":`):], []byte("}"))

			srv, _ := providertest.Serve(t, sseBytes(body))
			streamed := providertest.Stream(t, newAdapter(t, srv.URL+"/v1", Options{Stream: true}), []byte(`{}`))
			srv2, _ := providertest.Serve(t, providertest.Reply(http.StatusOK, "application/json", string(whole)))
			single := providertest.Stream(t, newAdapter(t, srv2.URL+"/v1", Options{}), []byte(`{}`))
			if streamed.Err != nil || single.Err != nil {
				t.Fatalf("Stream() errors = %v, %v", streamed.Err, single.Err)
			}
			if !reflect.DeepEqual(streamed.Resp, single.Resp) {
				t.Errorf("non-streamed = %+v; want the streamed %+v", single.Resp, streamed.Resp)
			}
		})
	}
}

func TestNonStreamingTooLarge(t *testing.T) {
	big := `{"id":"r","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"` +
		strings.Repeat("x", provider.DefaultLimits.MaxEventBytes) + `"}]}]}`
	srv, _ := providertest.Serve(t, providertest.Reply(http.StatusOK, "application/json", big))
	o := providertest.Stream(t, newAdapter(t, srv.URL+"/v1", Options{}), []byte(`{}`))
	if f := o.Failure(); f == nil || f.Class != provider.ClassResponseTooLarge || f.Reason != provider.LimitBodyBytes || f.Status != http.StatusOK || len(o.Frames) != 0 {
		t.Errorf("Stream() = %v with %d frames; want RESPONSE_TOO_LARGE (body_bytes, HTTP 200) and nothing relayed", o.Err, len(o.Frames))
	}
}

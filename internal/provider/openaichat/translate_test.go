package openaichat

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/providertest"
	"github.com/turnstream/turnstream/pkg/wire"
)

// call is the part of a finalized tool call a fixture asserts.
type call struct {
	ID, Name, Args string
	Complete       bool
}

// fixtureWant is the expected outcome of streaming one testdata/*.sse file.
type fixtureWant struct {
	text, reasoning string
	calls           []call
	finish, raw     string
	usage           *wire.Usage
	// fail, if set, is the expected failure class; partial is the text
	// relayed in deltas before it.
	fail       provider.Class
	partial    string
	retryAfter time.Duration
}

func c(id, name, args string) call { return call{ID: id, Name: name, Args: args, Complete: true} }

func u(in, cached, out, reasoning int64) *wire.Usage {
	return &wire.Usage{InputTokens: in, CachedInputTokens: cached, OutputTokens: out, ReasoningTokens: reasoning}
}

// fixtures maps every file in testdata/ (without .sse) to its expected
// outcome. Each file is one quirk from PROVIDER-QUIRKS.md.
var fixtures = map[string]fixtureWant{
	// Parallel calls interleave by index; arguments split inside a key,
	// inside a string escape and inside a \u escape.
	"parallel_interleaved": {
		calls: []call{
			c("call_AbCdEfGhIjKlMnOpQrStUvWx", "read_file", `{"path":"C:\\src\\main.go","enc":"caf\u00e9"}`),
			c("call_ZyXwVuTsRqPoNmLkJiHgFeDc", "search", `{"query":"parser \"quoted\""}`),
		},
		finish: wire.FinishToolCalls, raw: "tool_calls", usage: u(82, 0, 51, 0),
	},
	// LiteLLM, Fireworks, vLLM: id, type and name on every fragment.
	"repeated_id_name": {
		calls:  []call{c("call_w1", "get_weather", `{"city":"Paris","unit":"c"}`), c("call_w2", "get_weather", `{"city":"Oslo"}`)},
		finish: wire.FinishToolCalls, raw: "tool_calls", usage: u(40, 0, 30, 0),
	},
	// Continuations with "name": "" and "name": null, "id": null and "".
	"continuation_name_empty_null": {
		calls:  []call{c("call_add", "add", `{"a":1,"b":2}`)},
		finish: wire.FinishToolCalls, raw: "tool_calls",
	},
	// Mistral: no index; ids on first fragments, continuation by position;
	// two whole calls in one delta on the finish chunk.
	"missing_index": {
		calls: []call{
			c("D681PevKs", "get_time", `{"tz": "Europe/Paris"}`),
			c("h3mNq81Zx", "get_weather", `{"city": "Paris"}`),
			c("Zq1Zq1Zq1", "get_time", `{"tz": "UTC"}`),
			c("Yx2Yx2Yx2", "get_time", `{"tz": "JST"}`),
		},
		finish: wire.FinishToolCalls, raw: "tool_calls", usage: u(90, 0, 40, 0),
	},
	// Gemini's endpoint / old Ollama: no index and no id; the same tool twice;
	// finish "stop" with tool calls.
	"missing_index_no_id": {
		calls:  []call{c("", "add", `{"a":1,"b":2}`), c("", "add", `{"a":3,"b":4}`), c("", "mul", `{"a":5}`)},
		finish: wire.FinishToolCalls, raw: "stop", usage: u(50, 0, 21, 0),
	},
	// Newer Ollama: index 0 for every call, ids differ.
	"index_zero_every_call": {
		calls: []call{
			c("call_o1xq2", "get_time", `{"tz":"UTC"}`),
			c("call_k8v2p", "get_time", `{"tz":"JST"}`),
			c("call_r7m1s", "get_weather", `{"city":"Oslo"}`),
		},
		finish: wire.FinishToolCalls, raw: "tool_calls", usage: u(150, 0, 60, 0),
	},
	// Index starting at 1, sparse.
	"index_sparse": {
		calls:  []call{c("call_one", "first", `{"n":1}`), c("call_three", "second", `{"m":2}`)},
		finish: wire.FinishToolCalls, raw: "tool_calls",
	},
	// An id changing under the same index: the index wins, the first id stays.
	"id_changes_same_index": {
		calls:  []call{c("call_first", "lookup", `{"key":"v"}`)},
		finish: wire.FinishToolCalls, raw: "tool_calls",
	},
	// Groq: whole arguments with id and name, then an extra "arguments": "".
	"whole_args_extra_empty": {
		calls:  []call{c("call_g1", "get_time", `{"tz":"UTC"}`)},
		finish: wire.FinishToolCalls, raw: "tool_calls", usage: u(200, 0, 18, 0),
	},
	// arguments null (a no-argument call), a JSON object (TGI, llama.cpp),
	// absent.
	"arguments_null_object": {
		calls: []call{
			c("c0", "now", "{}"),
			c("c1", "search", `{"q":"go \"generics\"","limit":3,"filters":{"lang":["en","fr"]}}`),
			c("c2", "ping", "{}"),
		},
		finish: wire.FinishToolCalls, raw: "tool_calls",
	},
	// The last argument fragment shares its chunk with finish_reason.
	"args_in_finish_chunk": {
		calls:  []call{c("call_f", "get_time", `{"tz":"UTC"}`)},
		finish: wire.FinishToolCalls, raw: "tool_calls",
	},
	// Text before and between tool calls.
	"text_around_tools": {
		text:   "Let me check. And the weather: ",
		calls:  []call{c("call_a", "get_time", "{}"), c("call_b", "get_weather", `{"city":"Lima"}`)},
		finish: wire.FinishToolCalls, raw: "tool_calls",
	},
	// OpenAI forced tool choice: finish "stop" with tool calls is a tool turn.
	"stop_with_tool_calls": {
		calls:  []call{c("call_forced", "get_time", `{"tz":"UTC"}`)},
		finish: wire.FinishToolCalls, raw: "stop",
	},
	// "tool_calls" without any call is an anomaly, not an empty tool turn.
	"tool_calls_without_calls": {text: "Done.", finish: wire.FinishUnknown, raw: "tool_calls"},
	"tool_calls_nothing":       {fail: provider.ClassEmpty},
	// A normal stop with no content.
	"empty_stop": {fail: provider.ClassEmpty},
	// A length stop inside reasoning leaves no visible text; it is not empty.
	"length_in_reasoning": {
		reasoning: "First, I need to consider", finish: wire.FinishLength, raw: "length", usage: u(12, 0, 4, 4),
	},
	// OpenRouter: comments, the finish chunk repeated, then finish_reason null
	// with usage.
	"repeated_finish": {text: "Bonjour !", finish: wire.FinishStop, raw: "stop", usage: u(10, 0, 3, 0)},
	// A finish reason on every chunk: the last one before [DONE] wins, ""
	// does not clear it.
	"finish_every_chunk": {text: "One two three four", finish: wire.FinishLength, raw: "length"},
	// xAI: no finish_reason key on non-final chunks; completion_tokens
	// excludes reasoning tokens.
	"finish_key_omitted": {
		reasoning: "Counting letters.", text: "Three r's.", finish: wire.FinishStop, raw: "stop", usage: u(8, 6, 53, 50),
	},
	// OpenAI include_usage: usage alone in a choices: [] chunk; "usage": null
	// and "obfuscation" on the others.
	"usage_empty_choices": {text: "Hi there.", finish: wire.FinishStop, raw: "stop", usage: u(12, 8, 5, 0)},
	// Z.ai, DeepSeek, Mistral: usage on the finish chunk.
	"usage_on_finish": {text: "Ciao!", finish: wire.FinishStop, raw: "stop", usage: u(11, 0, 3, 0)},
	// OpenRouter, Groq: usage twice.
	"usage_twice": {text: "Yes.", finish: wire.FinishStop, raw: "stop", usage: u(30, 0, 7, 0)},
	// vLLM continuous usage: cumulative on every chunk, final after finish.
	"usage_cumulative": {text: "abc", finish: wire.FinishStop, raw: "stop", usage: u(9, 0, 4, 0)},
	// Moonshot: usage inside choices[0].
	"usage_in_choice": {text: "你好", finish: wire.FinishStop, raw: "stop", usage: u(19, 0, 2, 0)},
	// DeepSeek: keep-alive comments while queued; the prompt total includes
	// cache hits.
	"deepseek_cache": {
		reasoning: "Simple sum.", text: "2 + 2 = 4", finish: wire.FinishStop, raw: "stop", usage: u(36, 64, 40, 25),
	},
	// Azure: a first choices: [] chunk that is not usage; a trailing choice
	// with no delta.
	"azure_filters": {text: "Azure says hi.", finish: wire.FinishStop, raw: "stop"},
	// Unknown fields everywhere, integers too large for float64, a chunk id
	// that changes.
	"unknown_fields_huge_ints": {text: "Big ints", finish: wire.FinishStop, raw: "stop", usage: u(5, 0, 2, 0)},
	// reasoning_content (Kimi ids, usage in the choice).
	"reasoning_content": {
		reasoning: "The user wants the time.", text: "Checking.",
		calls:  []call{c("functions.get_time:0", "get_time", `{"tz": "Asia/Tokyo"}`)},
		finish: wire.FinishToolCalls, raw: "tool_calls", usage: u(60, 0, 20, 0),
	},
	// Ollama: reasoning.
	"reasoning_field": {reasoning: "We need to greet.", text: "Hello!", finish: wire.FinishStop, raw: "stop"},
	// OpenRouter reasoning_details: text, signature-only and encrypted entries.
	"reasoning_details": {
		reasoning: "Let me think carefully.", text: "Answer.", finish: wire.FinishStop, raw: "stop", usage: u(30, 0, 20, 12),
	},
	// Two or three reasoning fields with identical text: counted once.
	"reasoning_both_fields": {reasoning: "Same text twice over.", text: "Visible.", finish: wire.FinishStop, raw: "stop"},
	// Inline <think> split across chunks; a later literal tag stays text.
	"think_inline": {
		reasoning: "\nThe user wants 2+2.", text: "The answer is 4. I never write </think> twice.",
		finish: wire.FinishStop, raw: "stop",
	},
	// OpenAI refusal: delta.refusal fragments, content null, finish "stop":
	// the refusal is the visible text, the finish as sent.
	"refusal": {text: "I'm sorry, but I can't help with that.", finish: wire.FinishStop, raw: "stop", usage: u(31, 0, 9, 0)},
	// In-band errors.
	"error_first":         {fail: provider.ClassRateLimit, retryAfter: 1100 * time.Millisecond},
	"error_after_content": {fail: provider.ClassServer, partial: "Partial answer"},
	"error_finish_reason": {fail: provider.ClassServer, partial: "Starting"},
	"object_error":        {fail: provider.ClassServer, partial: "Hel"},
	"event_error":         {fail: provider.ClassRateLimit, retryAfter: 20 * time.Millisecond},
	"event_error_bare":    {fail: provider.ClassServer},
	// Termination.
	"done_without_blank_line": {text: "Short.", finish: wire.FinishStop, raw: "stop"},
	"eof_after_finish":        {fail: provider.ClassStreamClosed, partial: "Complete text"},
	"eof_before_finish":       {fail: provider.ClassStreamClosed},
	"malformed_chunk":         {fail: provider.ClassMalformed, partial: "ok"},
	// Tool-call id shapes: DeepSeek, Kimi, empty, "0", Mistral.
	"id_shapes": {
		calls: []call{
			c("call_00_T4mJ8ErVz1XwYkLqPnBcDf2G", "a", "{}"), c("functions.add:1", "add", `{"x":1}`),
			c("", "b", "{}"), c("0", "c", "{}"), c("aB3dE6gH9", "d", "{}"),
		},
		finish: wire.FinishToolCalls, raw: "tool_calls",
	},
}

func TestFixturesCovered(t *testing.T) {
	files := fixtureFiles(t)
	for name := range files {
		if _, ok := fixtures[name]; !ok {
			t.Errorf("testdata/%s.sse has no expectation in fixtures", name)
		}
	}
	for name := range fixtures {
		if _, ok := files[name]; !ok {
			t.Errorf("fixtures[%q] has no testdata/%s.sse", name, name)
		}
	}
}

// TestAdapterFixtures streams every fixture over real HTTP through
// Adapter.Stream and checks the finalized response or failure.
func TestAdapterFixtures(t *testing.T) {
	for name, body := range fixtureFiles(t) {
		want, ok := fixtures[name]
		if !ok {
			continue // reported by TestFixturesCovered
		}
		t.Run(name, func(t *testing.T) {
			srv, _ := providertest.Serve(t, sseBytes(body))
			o := providertest.Stream(t, newAdapter(t, srv.URL+"/v1", Options{}), []byte(`{}`))
			for i, f := range o.Frames {
				if !bytes.Contains(body, f.Raw) {
					t.Errorf("frame %d Raw = %q; want bytes of the stream", i, f.Raw)
				}
			}
			if want.fail != "" {
				checkFailure(t, o, want)
				return
			}
			if o.Err != nil {
				t.Fatalf("Stream(%s) error = %v; want a response", name, o.Err)
			}
			checkResponse(t, o, want)
			if n := len(o.Frames); n == 0 || string(o.Frames[n-1].Raw) != "[DONE]" {
				t.Errorf("last relayed frame is not [DONE]")
			}
		})
	}
}

func checkFailure(t *testing.T, o providertest.Outcome, want fixtureWant) {
	t.Helper()
	f := o.Failure()
	if f == nil {
		t.Fatalf("Stream() = %+v, nil; want failure %s", o.Resp, want.fail)
	}
	if f.Class != want.fail {
		t.Errorf("Stream() failure = %v; want class %s", f, want.fail)
	}
	if f.RetryAfter != want.retryAfter {
		t.Errorf("Stream() failure RetryAfter = %v; want %v", f.RetryAfter, want.retryAfter)
	}
	if f.RequestID != "req_fixture" {
		t.Errorf("Stream() failure RequestID = %q; want %q", f.RequestID, "req_fixture")
	}
	if got := o.DeltaText(); got != want.partial {
		t.Errorf("relayed delta text = %q; want %q", got, want.partial)
	}
}

func checkResponse(t *testing.T, o providertest.Outcome, want fixtureWant) {
	t.Helper()
	r := o.Resp
	if r.Text != want.text {
		t.Errorf("Text = %q; want %q", r.Text, want.text)
	}
	if r.Reasoning != want.reasoning {
		t.Errorf("Reasoning = %q; want %q", r.Reasoning, want.reasoning)
	}
	var calls []call
	for _, tc := range r.ToolCalls {
		calls = append(calls, call{ID: tc.ProviderID, Name: tc.Name, Args: tc.Arguments, Complete: tc.Complete})
	}
	if !reflect.DeepEqual(calls, want.calls) {
		t.Errorf("ToolCalls = %+v; want %+v", calls, want.calls)
	}
	if r.FinishReason != want.finish || r.RawFinishReason != want.raw {
		t.Errorf("finish = %q (raw %q); want %q (raw %q)", r.FinishReason, r.RawFinishReason, want.finish, want.raw)
	}
	if !reflect.DeepEqual(r.Usage, want.usage) {
		t.Errorf("Usage = %+v; want %+v", r.Usage, want.usage)
	}
	if !r.Terminal || !r.Executable() {
		t.Errorf("Terminal, Executable() = %v, %v; want true, true", r.Terminal, r.Executable())
	}
	// The normalized deltas agree with the finalized response and never
	// carry reasoning.
	if got := o.DeltaText(); got != r.Text {
		t.Errorf("relayed delta text = %q; want the response text %q", got, r.Text)
	}
	args := o.DeltaArgs()
	for _, tc := range r.ToolCalls {
		if got := args[tc.Index]; got != tc.Arguments && (got != "" || tc.Arguments != "{}") {
			t.Errorf("relayed arguments of block %d = %q; want %q", tc.Index, got, tc.Arguments)
		}
	}
	if r.Reasoning != "" {
		for i, f := range o.Frames {
			if f.Delta != nil && strings.TrimSpace(r.Reasoning) != "" && strings.Contains(f.Delta.Text, strings.TrimSpace(r.Reasoning)) {
				t.Errorf("frame %d delta text %q carries reasoning", i, f.Delta.Text)
			}
		}
	}
	var lastUsage *wire.Usage
	for _, f := range o.Frames {
		if f.Delta != nil && f.Delta.Usage != nil {
			lastUsage = f.Delta.Usage
		}
	}
	if !reflect.DeepEqual(lastUsage, r.Usage) {
		t.Errorf("last relayed usage = %+v; want %+v", lastUsage, r.Usage)
	}
}

// TestTranslatorFrameByFrame drives the translator without HTTP on a few
// sequences the fixtures do not isolate.
func TestTranslatorFrameByFrame(t *testing.T) {
	tests := []struct {
		name   string
		frames []string
		calls  []call
		text   string
	}{
		{
			name: "index 0 with empty ids: a second named call after complete arguments",
			frames: []string{
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"","function":{"name":"f","arguments":"{\"a\":1}"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"","function":{"name":"f","arguments":"{\"a\":2}"}}]}}]}`,
			},
			calls: []call{c("", "f", `{"a":1}`), c("", "f", `{"a":2}`)},
		},
		{
			name: "repeated name under the same index continues incomplete arguments",
			frames: []string{
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"{\"a\":"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"1}"}}]}}]}`,
			},
			calls: []call{c("", "f", `{"a":1}`)},
		},
		{
			name: "choices other than 0 are ignored",
			frames: []string{
				`{"choices":[{"index":1,"delta":{"content":"other"}},{"index":0,"delta":{"content":"mine"}}]}`,
			},
			text: "mine",
		},
		{
			name:   "content parts keep text parts",
			frames: []string{`{"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{}},{"text":"b"}]}}]}`},
			text:   "ab",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTranslator()
			for _, f := range tt.frames {
				if err := tr.Frame([]byte(f)); err != nil {
					t.Fatalf("Frame(%s) = %v; want nil", f, err)
				}
			}
			tr.Done()
			r := tr.Asm.Response()
			var calls []call
			for _, tc := range r.ToolCalls {
				calls = append(calls, call{ID: tc.ProviderID, Name: tc.Name, Args: tc.Arguments, Complete: tc.Complete})
			}
			if !reflect.DeepEqual(calls, tt.calls) || r.Text != tt.text {
				t.Errorf("Response() = text %q calls %+v; want text %q calls %+v", r.Text, calls, tt.text, tt.calls)
			}
		})
	}
}

func TestTranslatorErrors(t *testing.T) {
	tests := []struct {
		name string
		data string
		want provider.Class // empty: no error
	}{
		{"not json", `nope`, provider.ClassMalformed},
		{"empty", ``, provider.ClassMalformed},
		{"error object", `{"error":{"message":"boom","type":"server_error"}}`, provider.ClassServer},
		{"error string", `{"error":"rate limit exceeded"}`, provider.ClassRateLimit},
		{"error numeric code", `{"error":{"code":429,"message":"slow down"}}`, provider.ClassRateLimit},
		{"error null", `{"error":null,"choices":[]}`, ""},
		{"error quota", `{"error":{"code":"insufficient_quota","message":"You exceeded your current quota"}}`, provider.ClassQuota},
		{"object error", `{"object":"error","message":"bad","code":null}`, provider.ClassServer},
		{"object error rate limit", `{"object":"error","message":"Too Many Requests","code":429}`, provider.ClassRateLimit},
		{"plain chunk", `{"choices":[{"index":0,"delta":{"content":"x"}}]}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := NewTranslator().Frame([]byte(tt.data))
			var got provider.Class
			if err != nil {
				got = provider.AsFailure(err).Class
			}
			if got != tt.want {
				t.Errorf("Frame(%s) = %v; want class %q", tt.data, err, tt.want)
			}
		})
	}
}

package responses

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/providertest"
	"github.com/turnstream/turnstream/pkg/wire"
)

type wantCall struct {
	id, name, args string
}

// TestStreamFixtures serves every fixture byte for byte over HTTP through
// the real Adapter.Stream.
func TestStreamFixtures(t *testing.T) {
	tests := []struct {
		file      string
		class     provider.Class // empty: success
		retry     time.Duration
		text      string
		reasoning string
		calls     []wantCall
		finish    string
		raw       string
		usage     *wire.Usage
		respID    string
	}{
		{
			file: "parallel_calls_interleaved.sse",
			calls: []wantCall{
				{"call_QfG2yq3Kp0xW7b1mZt9LrD4e", "get_weather", `{"location":"Paris, Fr\u00e9nce","unit":"c"}`},
				{"call_8HnV0sTj2cYw5kRp3xLq6mBa", "get_time", `{"tz":"Europe/Paris","fmt":"\"HH:mm\""}`},
			},
			finish: wire.FinishToolCalls, raw: "completed", usage: &wire.Usage{InputTokens: 81, OutputTokens: 52}, respID: "resp_68a1",
		},
		{
			file: "text_and_calls.sse", text: "Let me check.",
			calls:  []wantCall{{"call_x1", "search", `{"q":"nats jetstream"}`}},
			finish: wire.FinishToolCalls, raw: "completed", usage: &wire.Usage{InputTokens: 40, OutputTokens: 20}, respID: "resp_68a1",
		},
		{
			file: "reasoning_encrypted.sse", text: "It is 21°C.", reasoning: "**Planning** the answer.\n\nThen check units.",
			finish: wire.FinishStop, raw: "completed",
			usage: &wire.Usage{InputTokens: 176, CachedInputTokens: 1024, OutputTokens: 300, ReasoningTokens: 256}, respID: "resp_68a1",
		},
		{
			file: "incomplete_max_output_tokens.sse", text: "The answer is",
			finish: wire.FinishLength, raw: "max_output_tokens", usage: &wire.Usage{InputTokens: 30, OutputTokens: 16}, respID: "resp_68a1",
		},
		{
			file: "incomplete_content_filter.sse", text: "I can",
			finish: wire.FinishContentFilter, raw: "content_filter", usage: &wire.Usage{InputTokens: 30, OutputTokens: 2}, respID: "resp_68a1",
		},
		{
			file: "incomplete_other.sse", text: "Stopped",
			finish: wire.FinishIncomplete, raw: "incomplete", usage: &wire.Usage{InputTokens: 5, OutputTokens: 1}, respID: "resp_68a1",
		},
		{file: "failed.sse", class: provider.ClassServer},
		{file: "error_rate_limit.sse", class: provider.ClassRateLimit, retry: 1200 * time.Millisecond},
		{file: "error_nested_after_content.sse", class: provider.ClassServer},
		{file: "no_terminal.sse", class: provider.ClassStreamClosed},
		{file: "done_marker_without_terminal.sse", class: provider.ClassStreamClosed},
		{file: "malformed_json.sse", class: provider.ClassMalformed},
		{file: "arguments_disagree.sse", class: provider.ClassMalformed},
		{file: "completed_empty.sse", class: provider.ClassEmpty},
		{
			file: "unknown_events.sse", text: "Sunny.",
			finish: wire.FinishStop, raw: "completed", usage: &wire.Usage{InputTokens: 10, OutputTokens: 3}, respID: "resp_68a1",
		},
		{
			file:   "done_arguments_without_deltas.sse",
			calls:  []wantCall{{"call_nodelta", "get_time", `{"tz":"Asia/Tokyo"}`}},
			finish: wire.FinishToolCalls, raw: "completed", usage: &wire.Usage{InputTokens: 10, OutputTokens: 5}, respID: "resp_68a1",
		},
		{
			file:   "arguments_after_done_ignored.sse",
			calls:  []wantCall{{"call_late", "get_time", `{"tz":"UTC"}`}},
			finish: wire.FinishToolCalls, raw: "completed", usage: &wire.Usage{InputTokens: 10, OutputTokens: 5}, respID: "resp_68a1",
		},
		{
			file: "terminal_output_only.sse", text: "Calling it.", reasoning: "Short plan.",
			calls:  []wantCall{{"call_bf", "lookup", `{"id":7}`}},
			finish: wire.FinishToolCalls, raw: "completed",
			usage: &wire.Usage{InputTokens: 15, CachedInputTokens: 5, OutputTokens: 9, ReasoningTokens: 4}, respID: "resp_68a1",
		},
		{
			file: "terminal_without_blank_line.sse", text: "Hi!",
			finish: wire.FinishStop, raw: "completed", usage: &wire.Usage{InputTokens: 3, OutputTokens: 2}, respID: "resp_68a1",
		},
		// An OpenAI-compatible gateway that mints a new item_id for every
		// event: the events of one item are correlated by output_index, and
		// the text done, item done and terminal output never add the
		// streamed text again.
		{
			file: "gateway_item_id_per_event.sse", text: "The answer is 42.",
			finish: wire.FinishStop, raw: "completed", usage: &wire.Usage{InputTokens: 25, OutputTokens: 6}, respID: "resp_gw7",
		},
		{
			file: "gateway_item_id_per_event_reasoning_message.sse", text: "It is 21°C.", reasoning: "**Units** first, then the number.",
			finish: wire.FinishStop, raw: "completed", usage: &wire.Usage{InputTokens: 60, OutputTokens: 40, ReasoningTokens: 24}, respID: "resp_gw7",
		},
		{
			file: "gateway_item_id_per_event_message_call.sse", text: "Let me look that up.",
			calls:  []wantCall{{"call_gw1", "lookup", `{"q":"jetstream"}`}},
			finish: wire.FinishToolCalls, raw: "completed", usage: &wire.Usage{InputTokens: 70, OutputTokens: 30}, respID: "resp_gw7",
		},
		{
			file:   "output_index_only.sse",
			calls:  []wantCall{{"call_p0", "f", `{"a":1}`}},
			finish: wire.FinishToolCalls, raw: "completed", respID: "resp_proxy",
		},
	}
	for _, tt := range tests {
		t.Run(strings.TrimSuffix(tt.file, ".sse"), func(t *testing.T) {
			body := fixture(t, tt.file)
			srv, _ := providertest.Serve(t, sseBytes(body))
			o := providertest.Stream(t, newAdapter(t, srv.URL+"/v1", Options{Stream: true}), []byte(`{}`))
			checkRelayed(t, body, o)
			if tt.class != "" {
				f := o.Failure()
				if f == nil || f.Class != tt.class || f.RetryAfter != tt.retry || f.RequestID != "req_fixture" {
					t.Fatalf("Stream() = %+v, %v; want %s failure, retry %v, request id req_fixture", o.Resp, o.Err, tt.class, tt.retry)
				}
				return
			}
			if o.Err != nil {
				t.Fatalf("Stream() error = %v; want success", o.Err)
			}
			r := o.Resp
			if r.Text != tt.text || r.Reasoning != tt.reasoning {
				t.Errorf("Stream() text, reasoning = %q, %q; want %q, %q", r.Text, r.Reasoning, tt.text, tt.reasoning)
			}
			if r.FinishReason != tt.finish || r.RawFinishReason != tt.raw {
				t.Errorf("Stream() finish = %q (raw %q); want %q (raw %q)", r.FinishReason, r.RawFinishReason, tt.finish, tt.raw)
			}
			if !reflect.DeepEqual(r.Usage, tt.usage) {
				t.Errorf("Stream() usage = %+v; want %+v", r.Usage, tt.usage)
			}
			if r.ResponseID != tt.respID || !r.Terminal {
				t.Errorf("Stream() response id %q, terminal %v; want %q, true", r.ResponseID, r.Terminal, tt.respID)
			}
			var got []wantCall
			for _, c := range r.ToolCalls {
				got = append(got, wantCall{c.ProviderID, c.Name, c.Arguments})
				if !c.Complete {
					t.Errorf("call %+v not complete; want complete", c)
				}
			}
			if !reflect.DeepEqual(got, tt.calls) {
				t.Errorf("Stream() calls = %q; want %q", got, tt.calls)
			}
			if !r.Executable() {
				t.Errorf("Stream().Executable() = false; want true")
			}
			// What the frames said must be what the response says, and
			// reasoning never reaches a delta.
			if dt := o.DeltaText(); dt != r.Text {
				t.Errorf("delta text = %q; want the response text %q", dt, r.Text)
			}
			args := o.DeltaArgs()
			for _, c := range r.ToolCalls {
				if args[c.Index] != c.Arguments {
					t.Errorf("delta arguments of block %d = %q; want %q", c.Index, args[c.Index], c.Arguments)
				}
			}
			last := o.Frames[len(o.Frames)-1].Delta
			if last == nil || last.FinishReason != tt.finish || !reflect.DeepEqual(last.Usage, tt.usage) {
				t.Errorf("terminal frame delta = %+v; want finish %q and usage %+v", last, tt.finish, tt.usage)
			}
		})
	}
}

// checkRelayed: every event up to the one that ended the attempt was
// relayed in order, its data byte for byte, with its event name.
func checkRelayed(t *testing.T, body []byte, o providertest.Outcome) {
	t.Helper()
	events := providertest.SplitSSE(body)
	if len(o.Frames) > len(events) || len(o.Frames) == 0 {
		t.Fatalf("relayed %d frames; want between 1 and %d", len(o.Frames), len(events))
	}
	for i, f := range o.Frames {
		if !bytes.Equal(f.Raw, events[i].Data) || f.Event != events[i].Name {
			t.Errorf("frame %d = %s %q; want %s %q", i, f.Event, f.Raw, events[i].Name, events[i].Data)
		}
	}
}

// TestStreamReasoningKept: the encrypted reasoning of output_item.done (or,
// missing there, of the terminal response) stays reachable on the
// Translator, and never in a delta or the visible text.
func TestStreamReasoningKept(t *testing.T) {
	tests := []struct {
		file string
		want []ReasoningItem
	}{
		{"reasoning_encrypted.sse", []ReasoningItem{{ID: "rs_68a3r", EncryptedContent: "gAAAAABoq-ENCRYPTED-1"}}},
		{"terminal_output_only.sse", []ReasoningItem{{ID: "rs_68e0", EncryptedContent: "gAAAAABoq-ENCRYPTED-2"}}},
		{"text_and_calls.sse", []ReasoningItem{}},
		// One reasoning item, kept once, though its done event and the
		// terminal output name it by ids of their own.
		{"gateway_item_id_per_event_reasoning_message.sse", []ReasoningItem{{ID: "rs_gw0008", EncryptedContent: "gAAAAABoq-ENCRYPTED-GW"}}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			tr := NewTranslator()
			var deltas strings.Builder
			for _, ev := range providertest.SplitSSE(fixture(t, tt.file)) {
				if err := tr.Event(ev.Name, ev.Data); err != nil {
					t.Fatalf("Event(%s) error = %v", ev.Name, err)
				}
				if d := tr.Asm.TakeDelta(); d != nil {
					deltas.WriteString(d.Text)
				}
			}
			if got := tr.Reasoning(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Reasoning() = %+v; want %+v", got, tt.want)
			}
			for _, r := range tr.Reasoning() {
				if strings.Contains(deltas.String(), r.EncryptedContent) || strings.Contains(tr.Asm.Response().Text, r.EncryptedContent) {
					t.Errorf("encrypted content leaked into visible text")
				}
			}
			if resp := tr.Asm.Response(); resp.Reasoning != "" && strings.Contains(deltas.String(), resp.Reasoning) {
				t.Errorf("delta text %q carries the reasoning %q", deltas.String(), resp.Reasoning)
			}
		})
	}
}

// TestTranslatorEvents covers single rules with short event sequences.
func TestTranslatorEvents(t *testing.T) {
	type ev struct{ name, data string }
	completed := ev{"response.completed", `{"type":"response.completed","response":{"id":"r","status":"completed"}}`}
	tests := []struct {
		name   string
		events []ev
		class  provider.Class
		check  func(t *testing.T, r *assemble.Response)
	}{
		{
			name: "payload type wins over the event line",
			events: []ev{
				{"message", `{"type":"response.output_text.delta","item_id":"m","output_index":0,"delta":"hi"}`},
				{"", `{"type":"response.completed","response":{"status":"completed"}}`},
			},
			check: func(t *testing.T, r *assemble.Response) {
				t.Helper()
				if r.Text != "hi" || r.FinishReason != wire.FinishStop {
					t.Errorf("response = %+v; want hi, stop", r)
				}
			},
		},
		{
			name:   "an error event line is an error whatever the payload",
			events: []ev{{"error", `{"type":"response.output_text.delta","delta":"x"}`}},
			class:  provider.ClassServer,
		},
		{
			name:   "error event with a string error",
			events: []ev{{"error", `{"type":"error","error":"quota exceeded"}`}},
			class:  provider.ClassQuota,
		},
		{
			name:   "error event with a numeric code",
			events: []ev{{"", `{"type":"error","code":429,"message":"Too Many Requests"}`}},
			class:  provider.ClassRateLimit,
		},
		{
			name:   "failed without an error object",
			events: []ev{{"", `{"type":"response.failed","response":{"status":"failed","error":null}}`}},
			class:  provider.ClassServer,
		},
		{
			name:   "failed on a rate limit",
			events: []ev{{"", `{"type":"response.failed","response":{"status":"failed","error":{"code":"rate_limit_exceeded","message":"slow down"}}}`}},
			class:  provider.ClassRateLimit,
		},
		{
			name:   "a completed event with a failed response fails",
			events: []ev{{"", `{"type":"response.completed","response":{"status":"failed","error":{"code":"server_error","message":"x"}}}`}},
			class:  provider.ClassServer,
		},
		{
			name: "a failed event never succeeds",
			events: []ev{
				{"", `{"type":"response.output_text.delta","item_id":"m","output_index":0,"delta":"x"}`},
				{"", `{"type":"response.failed","response":{"status":"completed"}}`},
			},
			class: provider.ClassServer,
		},
		{
			name:   "known event of the wrong shape",
			events: []ev{{"", `{"type":"response.output_text.delta","delta":5}`}},
			class:  provider.ClassMalformed,
		},
		{
			name:   "not an object",
			events: []ev{{"", `[1,2]`}},
			class:  provider.ClassMalformed,
		},
		{
			name: "unknown event of any shape is ignored",
			events: []ev{
				{"", `{"type":"response.future","delta":5,"item":"x","response":7}`},
				{"", `{"type":7}`},
				{"", `null`},
				{"", `{"type":"response.output_text.delta","item_id":"m","output_index":0,"delta":"ok"}`},
				completed,
			},
			check: func(t *testing.T, r *assemble.Response) {
				t.Helper()
				if r.Text != "ok" {
					t.Errorf("text = %q; want ok", r.Text)
				}
			},
		},
		{
			name: "text for a function call item never crosses into it",
			events: []ev{
				{"", `{"type":"response.output_item.added","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"c","name":"f","arguments":""}}`},
				{"", `{"type":"response.output_text.delta","item_id":"fc_1","output_index":0,"delta":"leak"}`},
				{"", `{"type":"response.reasoning_summary_text.delta","item_id":"fc_1","output_index":0,"delta":"leak"}`},
				{"", `{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"{}"}`},
				{"", `{"type":"response.output_item.done","output_index":0,"item":{"id":"fc_1","type":"function_call","status":"completed","call_id":"c","name":"f","arguments":"{}"}}`},
				completed,
			},
			check: func(t *testing.T, r *assemble.Response) {
				t.Helper()
				if r.Text != "" || r.Reasoning != "" || len(r.ToolCalls) != 1 || r.ToolCalls[0].Arguments != "{}" || !r.Executable() {
					t.Errorf("response = %+v; want one executable call and nothing else", r)
				}
			},
		},
		{
			name: "a call never done is not complete",
			events: []ev{
				{"", `{"type":"response.output_item.added","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"c","name":"f","arguments":""}}`},
				{"", `{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"{}"}`},
				completed,
			},
			check: func(t *testing.T, r *assemble.Response) {
				t.Helper()
				if len(r.ToolCalls) != 1 || r.ToolCalls[0].Complete || r.Executable() {
					t.Errorf("response = %+v; want the call present but not complete", r)
				}
			},
		},
		{
			name: "a call done as incomplete is not complete",
			events: []ev{
				{"", `{"type":"response.output_item.added","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"c","name":"f","arguments":""}}`},
				{"", `{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"{}"}`},
				{"", `{"type":"response.output_item.done","output_index":0,"item":{"id":"fc_1","type":"function_call","status":"incomplete","call_id":"c","name":"f","arguments":"{}"}}`},
				completed,
			},
			check: func(t *testing.T, r *assemble.Response) {
				t.Helper()
				if len(r.ToolCalls) != 1 || r.ToolCalls[0].Complete || r.Executable() {
					t.Errorf("response = %+v; want the call present but not complete", r)
				}
			},
		},
		{
			name: "a different item id at a taken output index is another item",
			events: []ev{
				{"", `{"type":"response.output_item.added","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"c1","name":"f","arguments":""}}`},
				{"", `{"type":"response.output_item.added","output_index":0,"item":{"id":"fc_2","type":"function_call","call_id":"c2","name":"g","arguments":""}}`},
				{"", `{"type":"response.function_call_arguments.delta","item_id":"fc_2","output_index":0,"delta":"{\"b\":2}"}`},
				{"", `{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"{\"a\":1}"}`},
				completed,
			},
			check: func(t *testing.T, r *assemble.Response) {
				t.Helper()
				if len(r.ToolCalls) != 2 || r.ToolCalls[0].Arguments != `{"a":1}` || r.ToolCalls[1].Arguments != `{"b":2}` ||
					r.ToolCalls[0].ProviderID != "c1" || r.ToolCalls[1].ProviderID != "c2" {
					t.Errorf("calls = %+v; want c1 {a:1} and c2 {b:2}", r.ToolCalls)
				}
			},
		},
		{
			name: "a new item id at a taken output index is the same item",
			events: []ev{
				{"", `{"type":"response.output_item.added","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"c1","name":"f","arguments":""}}`},
				{"", `{"type":"response.function_call_arguments.delta","item_id":"fc_2","output_index":0,"delta":"{\"a\":"}`},
				{"", `{"type":"response.function_call_arguments.delta","item_id":"fc_3","output_index":0,"delta":"1}"}`},
				{"", `{"type":"response.function_call_arguments.done","item_id":"fc_4","output_index":0,"arguments":"{\"a\":1}"}`},
				{"", `{"type":"response.output_text.delta","item_id":"m_1","output_index":1,"delta":"ok"}`},
				{"", `{"type":"response.output_text.done","item_id":"m_2","output_index":1,"text":"ok"}`},
				{"", `{"type":"response.output_item.done","output_index":1,"item":{"id":"m_3","type":"message","content":[{"type":"output_text","text":"ok"}]}}`},
				{"", `{"type":"response.output_item.done","output_index":0,"item":{"id":"fc_5","type":"function_call","call_id":"c1","name":"f","arguments":"{\"a\":1}"}}`},
				{"", `{"type":"response.completed","response":{"status":"completed","output":[` +
					`{"id":"fc_6","type":"function_call","call_id":"c1","name":"f","arguments":"{\"a\":1}"},{"id":"m_4","type":"message","content":[{"type":"output_text","text":"ok"}]}]}}`},
			},
			check: func(t *testing.T, r *assemble.Response) {
				t.Helper()
				if r.Text != "ok" || len(r.ToolCalls) != 1 || r.ToolCalls[0].Arguments != `{"a":1}` || !r.Executable() {
					t.Errorf("response = %+v; want text ok and one executable call f({\"a\":1})", r)
				}
			},
		},
		{
			name: "without an output index, item ids tell items apart",
			events: []ev{
				{"", `{"type":"response.output_text.delta","item_id":"m1","delta":"a"}`},
				{"", `{"type":"response.output_text.delta","item_id":"m2","delta":"b"}`},
				{"", `{"type":"response.output_text.done","item_id":"m1","text":"a"}`},
				{"", `{"type":"response.output_text.done","item_id":"m2","text":"b"}`},
				completed,
			},
			check: func(t *testing.T, r *assemble.Response) {
				t.Helper()
				if r.Text != "ab" {
					t.Errorf("text = %q; want ab", r.Text)
				}
			},
		},
		{
			name: "arguments done fills a call that got no delta; whitespace differences agree",
			events: []ev{
				{"", `{"type":"response.output_item.added","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"c1","name":"f"}}`},
				{"", `{"type":"response.function_call_arguments.done","item_id":"fc_1","output_index":0,"arguments":"{\"a\": 1}"}`},
				{"", `{"type":"response.output_item.done","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"c1","name":"f","arguments":"{\"a\":1}"}}`},
				completed,
			},
			check: func(t *testing.T, r *assemble.Response) {
				t.Helper()
				if len(r.ToolCalls) != 1 || r.ToolCalls[0].Arguments != `{"a": 1}` || !r.Executable() {
					t.Errorf("calls = %+v; want one executable call", r.ToolCalls)
				}
			},
		},
		{
			name: "object arguments from a proxy",
			events: []ev{
				{"", `{"type":"response.output_item.done","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"c1","name":"f","arguments":{"a":[1,2]}}}`},
				completed,
			},
			check: func(t *testing.T, r *assemble.Response) {
				t.Helper()
				if len(r.ToolCalls) != 1 || r.ToolCalls[0].Arguments != `{"a":[1,2]}` || !r.Executable() {
					t.Errorf("calls = %+v; want the object as arguments", r.ToolCalls)
				}
			},
		},
		{
			name: "a call without arguments gets {}",
			events: []ev{
				{"", `{"type":"response.output_item.done","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"c1","name":"now","arguments":""}}`},
				completed,
			},
			check: func(t *testing.T, r *assemble.Response) {
				t.Helper()
				if len(r.ToolCalls) != 1 || r.ToolCalls[0].Arguments != `{}` || !r.Executable() {
					t.Errorf("calls = %+v; want now({})", r.ToolCalls)
				}
			},
		},
		{
			name: "nameless call is not executable",
			events: []ev{
				{"", `{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"{}"}`},
				completed,
			},
			check: func(t *testing.T, r *assemble.Response) {
				t.Helper()
				if len(r.ToolCalls) != 1 || r.ToolCalls[0].Complete || r.Executable() {
					t.Errorf("calls = %+v; want one incomplete call", r.ToolCalls)
				}
			},
		},
		{
			name: "truncated arguments are not executable",
			events: []ev{
				{"", `{"type":"response.output_item.added","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"c1","name":"f"}}`},
				{"", `{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"{\"a\":"}`},
				{"", `{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}}`},
			},
			check: func(t *testing.T, r *assemble.Response) {
				t.Helper()
				if r.FinishReason != wire.FinishLength || len(r.ToolCalls) != 1 || r.ToolCalls[0].Complete {
					t.Errorf("response = %+v; want length and an incomplete call", r)
				}
			},
		},
		{
			name: "text of message items never interleaves",
			events: []ev{
				{"", `{"type":"response.output_text.delta","item_id":"m1","output_index":0,"delta":"a"}`},
				{"", `{"type":"response.output_text.delta","item_id":"m2","output_index":1,"delta":"b"}`},
				{"", `{"type":"response.output_text.delta","item_id":"m1","output_index":0,"delta":"late"}`},
				{"", `{"type":"response.output_text.delta","item_id":"m2","output_index":1,"delta":"c"}`},
				{"", `{"type":"response.output_item.done","output_index":2,"item":{"id":"m3","type":"message","content":[{"type":"output_text","text":"d"}]}}`},
				completed,
			},
			check: func(t *testing.T, r *assemble.Response) {
				t.Helper()
				if r.Text != "abcd" {
					t.Errorf("text = %q; want abcd, in the order it arrived", r.Text)
				}
			},
		},
		{
			name: "refusal is visible text",
			events: []ev{
				{"", `{"type":"response.refusal.delta","item_id":"m","output_index":0,"delta":"I can't help with that."}`},
				completed,
			},
			check: func(t *testing.T, r *assemble.Response) {
				t.Helper()
				if r.Text != "I can't help with that." {
					t.Errorf("text = %q; want the refusal", r.Text)
				}
			},
		},
		{
			name: "raw reasoning text and text done filling missed deltas",
			events: []ev{
				{"", `{"type":"response.reasoning_text.delta","item_id":"rs","output_index":0,"content_index":0,"delta":"think"}`},
				{"", `{"type":"response.output_text.done","item_id":"m","output_index":1,"content_index":0,"text":"answer"}`},
				completed,
			},
			check: func(t *testing.T, r *assemble.Response) {
				t.Helper()
				if r.Reasoning != "think" || r.Text != "answer" {
					t.Errorf("response = %+v; want think, answer", r)
				}
			},
		},
		{
			name: "cancelled is incomplete",
			events: []ev{
				{"", `{"type":"response.output_text.delta","item_id":"m","output_index":0,"delta":"x"}`},
				{"", `{"type":"response.incomplete","response":{"status":"cancelled"}}`},
			},
			check: func(t *testing.T, r *assemble.Response) {
				t.Helper()
				if r.FinishReason != wire.FinishIncomplete || r.RawFinishReason != "cancelled" {
					t.Errorf("finish = %q (%q); want incomplete (cancelled)", r.FinishReason, r.RawFinishReason)
				}
			},
		},
		{
			name: "a terminal event whose status is not terminal ends as its event says",
			events: []ev{
				{"", `{"type":"response.output_text.delta","item_id":"m","output_index":0,"delta":"x"}`},
				{"", `{"type":"response.completed","response":{"status":"in_progress"}}`},
			},
			check: func(t *testing.T, r *assemble.Response) {
				t.Helper()
				if r.FinishReason != wire.FinishStop || !r.Terminal {
					t.Errorf("finish = %q terminal %v; want stop, terminal", r.FinishReason, r.Terminal)
				}
			},
		},
		{
			name: "nothing changes after the terminal event",
			events: []ev{
				{"", `{"type":"response.output_text.delta","item_id":"m","output_index":0,"delta":"x"}`},
				completed,
				{"", `{"type":"response.output_text.delta","item_id":"m","output_index":0,"delta":"late"}`},
				{"", `{"type":"response.output_item.done","output_index":1,"item":{"id":"fc","type":"function_call","call_id":"c","name":"f","arguments":"{}"}}`},
			},
			check: func(t *testing.T, r *assemble.Response) {
				t.Helper()
				if r.Text != "x" || len(r.ToolCalls) != 0 {
					t.Errorf("response = %+v; want x and no call", r)
				}
			},
		},
		{
			name: "cached tokens beyond the input are clamped",
			events: []ev{
				{"", `{"type":"response.output_text.delta","item_id":"m","output_index":0,"delta":"x"}`},
				{"", `{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":5,"input_tokens_details":{"cached_tokens":9},"output_tokens":2}}}`},
			},
			check: func(t *testing.T, r *assemble.Response) {
				t.Helper()
				if want := (&wire.Usage{InputTokens: 0, CachedInputTokens: 5, OutputTokens: 2}); !reflect.DeepEqual(r.Usage, want) {
					t.Errorf("usage = %+v; want %+v", r.Usage, want)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTranslator()
			var err error
			for _, e := range tt.events {
				if err = tr.Event(e.name, []byte(e.data)); err != nil {
					break
				}
			}
			if tt.class != "" {
				if f := provider.AsFailure(err); f == nil || f.Class != tt.class {
					t.Fatalf("Event() error = %v; want %s", err, tt.class)
				}
				return
			}
			if err != nil {
				t.Fatalf("Event() error = %v", err)
			}
			if !tr.Asm.Reached() {
				t.Fatalf("terminal not reached")
			}
			tt.check(t, tr.Asm.Response())
		})
	}
}

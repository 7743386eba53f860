package mockllm_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/turnstream/turnstream/internal/mockllm"
)

// accumulateMessage decodes every event as anthropic-sdk-go's stream event
// and feeds it to the SDK's own accumulator, checking each frame's event
// line names its type and that message_stop comes last.
func accumulateMessage(t *testing.T, events []event) anthropic.Message {
	t.Helper()
	var msg anthropic.Message
	for i, ev := range events {
		var e anthropic.MessageStreamEventUnion
		if err := json.Unmarshal([]byte(ev.data), &e); err != nil {
			t.Fatalf("event %d is not a Messages event: %v\n%s", i, err, ev.data)
		}
		if e.Type != ev.name {
			t.Errorf("event %d: event line %q, payload type %q", i, ev.name, e.Type)
		}
		if err := msg.Accumulate(e); err != nil {
			t.Fatalf("the SDK accumulator rejected event %d: %v\n%s", i, err, ev.data)
		}
		if e.Type == "message_stop" && i != len(events)-1 {
			t.Errorf("message_stop is event %d of %d; want it last", i, len(events))
		}
	}
	if n := len(events); n == 0 || events[n-1].name != "message_stop" {
		t.Errorf("the stream does not end with message_stop")
	}
	return msg
}

func TestMessagesStreamBuilder(t *testing.T) {
	calls := []mockllm.Call{
		{ID: "toolu_a", Name: "read_file", Arguments: `{"path":"C:\\src\\main.go","note":"say \"hi\""}`},
		{ID: "toolu_b", Name: "search", Arguments: `{"query":"café ☕ 日本","n":3}`},
	}
	for _, split := range []int{1, 3, 0} {
		s := mockllm.NewMessagesStreamID("msg_test", "claude-test").Usage(120, 100, 30).
			RedactedThinking("EmwKAhgBEgy3va3pzix").
			Thinking("Think  about it.", "sig-1").
			Text("Hello  there, world. ").
			Ping().
			ToolUse(split, calls...).
			Stop("tool_use", 34)
		msg := accumulateMessage(t, framesAsEvents(s.Frames()))
		if msg.ID != "msg_test" || msg.Model != "claude-test" || msg.StopReason != "tool_use" {
			t.Errorf("message = %s %s %s; want msg_test claude-test tool_use", msg.ID, msg.Model, msg.StopReason)
		}
		u := msg.Usage
		if u.InputTokens != 120 || u.CacheReadInputTokens != 100 || u.CacheCreationInputTokens != 30 || u.OutputTokens != 34 {
			t.Errorf("usage = %+v; want 120 in, 100 read, 30 written, 34 out", u)
		}
		if len(msg.Content) != 5 {
			t.Fatalf("split %d: %d blocks; want 5", split, len(msg.Content))
		}
		c := msg.Content
		if c[0].Type != "redacted_thinking" || c[0].Data != "EmwKAhgBEgy3va3pzix" {
			t.Errorf("block 0 = %s; want the redacted thinking", c[0].RawJSON())
		}
		if c[1].Type != "thinking" || c[1].Thinking != "Think  about it." || c[1].Signature != "sig-1" {
			t.Errorf("block 1 = %s; want the signed thinking", c[1].RawJSON())
		}
		if c[2].Text != "Hello  there, world. " {
			t.Errorf("block 2 text = %q", c[2].Text)
		}
		for i, want := range calls {
			b := c[3+i]
			if b.Type != "tool_use" || b.ID != want.ID || b.Name != want.Name || string(b.Input) != want.Arguments {
				t.Errorf("split %d: call %d = {%s %s %s}; want {%s %s %s}", split, i, b.ID, b.Name, b.Input, want.ID, want.Name, want.Arguments)
			}
		}
	}
}

func TestMessagesErrorEvent(t *testing.T) {
	s := mockllm.NewMessagesStream("m").Text("partial").Error("overloaded_error", "Overloaded")
	last := s.Frames()[len(s.Frames())-1]
	var e anthropic.ErrorResponse
	if err := json.Unmarshal([]byte(last.Data), &e); err != nil || last.Event != "error" || e.Error.Type != "overloaded_error" {
		t.Errorf("last frame = %s %s (%v); want an overloaded_error event", last.Event, last.Data, err)
	}
	r := mockllm.AnthropicError(529, "overloaded_error", "Overloaded", nil)
	if err := json.Unmarshal([]byte(r.Body), &e); err != nil || r.Status != 529 || e.Error.Type != "overloaded_error" || e.Error.Message != "Overloaded" {
		t.Errorf("AnthropicError body = %s (%v)", r.Body, err)
	}
}

const weatherTools = `[{"name":"get_weather","description":"Weather.","input_schema":{"type":"object","properties":{"city":{"type":"string","examples":["Paris"]}}}}]`

// TestMessagesDefault: a tool turn, with signed thinking when asked for,
// then the replay of that thinking with the results; the replay is
// checked the way Anthropic checks it.
func TestMessagesDefault(t *testing.T) {
	srv := start(t, mockllm.New(nil))
	first := `{"model":"claude-test","max_tokens":4096,"system":[{"type":"text","text":"Be brief."}],"thinking":{"type":"enabled","budget_tokens":1024},` +
		`"messages":[{"role":"user","content":[{"type":"text","text":"Weather in Paris?"}]}],"tools":` + weatherTools + `,"stream":true}`
	res := post(t, srv, "/v1/messages", first)
	if res.status != http.StatusOK || res.header.Get("Request-Id") == "" {
		t.Fatalf("POST = %d %v; want a 200 stream with a request-id", res.status, res.header)
	}
	events, _ := parseSSE(res.body)
	msg := accumulateMessage(t, events)
	if msg.StopReason != "tool_use" || len(msg.Content) != 3 {
		t.Fatalf("answer = %s; want thinking, text and a tool_use", msg.RawJSON())
	}
	thinking, use := msg.Content[0], msg.Content[2]
	if thinking.Type != "thinking" || thinking.Signature != mockllm.Signature(thinking.Thinking) {
		t.Fatalf("block 0 = %s; want thinking signed by Signature", thinking.RawJSON())
	}
	if use.Type != "tool_use" || use.Name != "get_weather" || string(use.Input) != `{"city":"Paris"}` || !strings.HasPrefix(use.ID, "toolu_") {
		t.Fatalf("block 2 = %s; want the get_weather call", use.RawJSON())
	}

	replay := func(thinkingBlock string) rawResponse {
		return post(t, srv, "/v1/messages", `{"model":"claude-test","max_tokens":4096,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[`+
			`{"role":"user","content":"Weather in Paris?"},`+
			`{"role":"assistant","content":[`+thinkingBlock+`{"type":"tool_use","id":"`+use.ID+`","name":"get_weather","input":{"city":"Paris"}}]},`+
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"`+use.ID+`","content":"18°C"}]}],"tools":`+weatherTools+`,"stream":true}`)
	}
	signed, _ := json.Marshal(map[string]string{"type": "thinking", "thinking": thinking.Thinking, "signature": thinking.Signature})
	res = replay(string(signed) + ",")
	if res.status != http.StatusOK {
		t.Fatalf("replay with the signed thinking = %d %s; want 200", res.status, res.body)
	}
	events, _ = parseSSE(res.body)
	msg = accumulateMessage(t, events)
	if last := msg.Content[len(msg.Content)-1]; msg.StopReason != "end_turn" || !strings.Contains(last.Text, `get_weather said "18°C"`) {
		t.Errorf("replay answer = %s; want the result reported", msg.RawJSON())
	}

	tampered, _ := json.Marshal(map[string]string{"type": "thinking", "thinking": thinking.Thinking + " (edited)", "signature": thinking.Signature})
	for name, block := range map[string]string{
		"tampered thinking": string(tampered) + ",",
		"no thinking":       "",
	} {
		res := replay(block)
		var e anthropic.ErrorResponse
		if err := json.Unmarshal(res.body, &e); err != nil || res.status != http.StatusBadRequest || e.Error.Type != "invalid_request_error" {
			t.Errorf("replay with %s = %d %s; want 400 invalid_request_error", name, res.status, res.body)
		}
	}
}

func TestMessagesDefaultPlainText(t *testing.T) {
	srv := start(t, mockllm.New(nil))
	res := post(t, srv, "/messages", `{"model":"m","max_tokens":16,"system":"s","messages":[{"role":"user","content":"Hi"}],"stream":true}`)
	events, _ := parseSSE(res.body)
	msg := accumulateMessage(t, events)
	if len(msg.Content) != 1 || msg.Content[0].Text != "Hello from the mock provider. You said: Hi" || msg.StopReason != "end_turn" {
		t.Errorf("answer = %s; want text only (no thinking unless asked)", msg.RawJSON())
	}
	bad := post(t, srv, "/v1/messages", `{"messages":`)
	var e anthropic.ErrorResponse
	if err := json.Unmarshal(bad.body, &e); err != nil || bad.status != http.StatusBadRequest || e.Error.Type != "invalid_request_error" {
		t.Errorf("bad body = %d %s; want an Anthropic 400", bad.status, bad.body)
	}
}

func TestMessagesRequestParsed(t *testing.T) {
	s := mockllm.New(mockllm.Queue(mockllm.NewMessagesStream("m").Text("ok").Stop("end_turn", 1).Response()))
	srv := start(t, s)
	post(t, srv, "/v1/messages", `{"model":"claude-x","max_tokens":99,"system":[{"type":"text","text":"A"},{"type":"text","text":"B"}],`+
		`"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"Hi"}],"tools":`+weatherTools+`,"stream":true}`)
	r := s.Requests()[0]
	if !r.IsMessages() || r.Model != "claude-x" || r.MaxTokens != 99 || r.System != "AB" || !r.Thinking || !r.Stream {
		t.Errorf("request = %+v", r)
	}
	if len(r.Tools) != 1 || r.Tools[0].Function.Name != "get_weather" || r.LastAnthropic().Content.Text() != "Hi" {
		t.Errorf("tools %+v, last message %+v", r.Tools, r.LastAnthropic())
	}
}

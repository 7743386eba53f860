package conformance

import (
	"github.com/turnstream/turnstream/internal/mockllm"
)

// Messages is the Anthropic Messages dialect: message_start with the input
// usage, content blocks by index (text, thinking with its signature_delta,
// redacted_thinking, tool_use with input_json_delta fragments), each
// started and stopped, ping keep-alives (a stall too is pings), the stop
// reason and output usage in message_delta, message_stop as the terminal
// marker, and error events for in-band errors. HTTP errors have
// Anthropic's error body, the transcript's code as the error type.
type Messages struct{}

// Features implements Dialect.
func (Messages) Features() []Feature {
	return []Feature{RawFinish, Reasoning, Signatures, TruncatedCalls, EOFIsTruncation}
}

// stopReasons are the transcripts' finish values in Anthropic's words;
// any other is sent as it is (the API adds stop reasons over time).
var stopReasons = map[string]string{"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens", "content_filter": "refusal"}

// Render implements Dialect.
func (Messages) Render(tr Transcript) *mockllm.Response {
	if tr.Status != 0 && tr.Status != 200 {
		return mockllm.AnthropicError(tr.Status, tr.Code, tr.Message, tr.Header)
	}
	var use *Usage
	for _, ev := range tr.Events {
		if ev.Kind == EvUsage {
			use = ev.Usage
		}
	}
	r := &msgRender{s: mockllm.NewMessagesStreamID("msg_conf", "m"), calls: map[int]int{}, open: -1}
	if use != nil {
		r.s.Usage(use.Prompt-use.Cached, use.Cached, 0) // Anthropic's input_tokens counts no cache read
	}
	for _, ev := range tr.Events {
		switch ev.Kind {
		case EvText, EvRefusal: // Anthropic's refusal is text (with stop reason refusal)
			r.s.Delta(r.content("text"), map[string]any{"type": "text_delta", "text": ev.Text})
		case EvReasoning:
			r.s.Delta(r.content("thinking"), map[string]any{"type": "thinking_delta", "thinking": ev.Text})
		case EvSignature:
			r.s.Delta(r.content("thinking"), map[string]any{"type": "signature_delta", "signature": ev.Text})
		case EvRedacted:
			r.closeOpen()
			r.s.RedactedThinking(ev.Text)
		case EvToolStart:
			r.closeOpen()
			r.calls[ev.Index] = r.s.Start(map[string]any{"type": "tool_use", "id": ev.ID, "name": ev.Name, "input": map[string]any{}})
		case EvToolArgs:
			r.s.Delta(r.calls[ev.Index], map[string]any{"type": "input_json_delta", "partial_json": ev.Text})
		case EvToolDone:
			r.s.End(r.calls[ev.Index])
		case EvMetadata, EvComment:
			r.s.Ping()
		case EvFinish:
			r.closeOpen()
			var reason any
			if ev.Text != "" {
				reason = ev.Text
				if s, ok := stopReasons[ev.Text]; ok {
					reason = s
				}
			}
			fields := map[string]any{"delta": map[string]any{"stop_reason": reason, "stop_sequence": nil}}
			if use != nil {
				fields["usage"] = map[string]any{"output_tokens": use.Completion}
			}
			r.s.Event("message_delta", fields)
		case EvError:
			r.s.Error(ev.Code, ev.Text)
		}
	}
	if tr.Malformed {
		r.s.Add(mockllm.Frame{Event: "content_block_delta", Data: `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}`})
	}
	resp := &mockllm.Response{Header: tr.Header, Stall: tr.Stall, KeepAlive: mockllm.PingKeepAlive}
	switch tr.End {
	case EndTerminal:
		r.s.Event("message_stop", map[string]any{})
	case EndDisconnect:
		resp.DisconnectAfter = len(r.s.Frames())
	}
	resp.Frames = r.s.Frames()
	return resp
}

// msgRender keeps a text or thinking block open until another block
// starts, as Anthropic streams them.
type msgRender struct {
	s     *mockllm.MessagesStream
	calls map[int]int // transcript call index -> block index
	open  int         // the open text or thinking block, -1 for none
	kind  string      // its type
}

// content returns the open block of kind (text or thinking), closing
// another and starting one as needed.
func (r *msgRender) content(kind string) int {
	if r.open >= 0 && r.kind == kind {
		return r.open
	}
	r.closeOpen()
	block := map[string]any{"type": kind, "text": ""}
	if kind == "thinking" {
		block = map[string]any{"type": kind, "thinking": "", "signature": ""}
	}
	r.open, r.kind = r.s.Start(block), kind
	return r.open
}

func (r *msgRender) closeOpen() {
	if r.open >= 0 {
		r.s.End(r.open)
		r.open = -1
	}
}

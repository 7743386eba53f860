package mockllm

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
)

// MessagesStream builds the events of an Anthropic Messages stream: each
// frame carries an "event:" line; the stream opens with message_start
// (the message id, model and input usage) and a ping, holds content blocks
// one after the other, each started, given deltas by its index and
// stopped, and ends with message_delta (the stop reason and the
// cumulative output tokens) and message_stop. There is no [DONE].
type MessagesStream struct {
	id, model string
	input     map[string]int
	next      int // the next block's index
	frames    []Frame
}

// NewMessagesStream starts a stream for model.
func NewMessagesStream(model string) *MessagesStream {
	return NewMessagesStreamID("msg_mock", model)
}

// NewMessagesStreamID starts a stream whose message has the given id.
func NewMessagesStreamID(id, model string) *MessagesStream {
	return &MessagesStream{id: id, model: model}
}

// Event appends one event of type typ with fields (its "type" set to typ).
func (s *MessagesStream) Event(typ string, fields map[string]any) *MessagesStream {
	fields["type"] = typ
	b, _ := json.Marshal(fields) // plain values: cannot fail
	s.frames = append(s.frames, Frame{Event: typ, Data: string(b)})
	return s
}

// Usage sets the input usage message_start reports: input tokens (neither
// cache reads nor cache writes, as Anthropic counts them), cache reads and
// cache writes.
func (s *MessagesStream) Usage(input, cacheRead, cacheWrite int) *MessagesStream {
	s.input = map[string]int{"input_tokens": input, "cache_read_input_tokens": cacheRead, "cache_creation_input_tokens": cacheWrite}
	return s
}

// Add appends arbitrary frames (comments, events, verbatim bytes).
func (s *MessagesStream) Add(f ...Frame) *MessagesStream {
	s.frames = append(s.frames, f...)
	return s
}

// Ping appends a ping event, Anthropic's keep-alive.
func (s *MessagesStream) Ping() *MessagesStream {
	s.frames = append(s.frames, pingFrame)
	return s
}

// pingFrame is a ping event exactly as Anthropic writes it.
var pingFrame = Frame{Event: "ping", Data: `{"type": "ping"}`}

// PingKeepAlive is a ping event, verbatim: a Response's KeepAlive for a
// stall of pings.
const PingKeepAlive = "event: ping\ndata: {\"type\": \"ping\"}\n\n"

// Start starts a content block (content_block_start) at the next index,
// and returns the index.
func (s *MessagesStream) Start(block map[string]any) int {
	i := s.next
	s.next++
	s.Event("content_block_start", map[string]any{"index": i, "content_block": block})
	return i
}

// Delta appends a content_block_delta for the block at index i.
func (s *MessagesStream) Delta(i int, delta map[string]any) *MessagesStream {
	return s.Event("content_block_delta", map[string]any{"index": i, "delta": delta})
}

// End stops the block at index i (content_block_stop).
func (s *MessagesStream) End(i int) *MessagesStream {
	return s.Event("content_block_stop", map[string]any{"index": i})
}

// Text adds a text block, streamed one word per text_delta.
func (s *MessagesStream) Text(text string) *MessagesStream {
	i := s.Start(map[string]any{"type": "text", "text": ""})
	for _, w := range Words(text) {
		s.Delta(i, map[string]any{"type": "text_delta", "text": w})
	}
	return s.End(i)
}

// Thinking adds a thinking block, streamed one word per thinking_delta,
// then its signature in a signature_delta (none when signature is empty).
func (s *MessagesStream) Thinking(text, signature string) *MessagesStream {
	i := s.Start(map[string]any{"type": "thinking", "thinking": "", "signature": ""})
	for _, w := range Words(text) {
		s.Delta(i, map[string]any{"type": "thinking_delta", "thinking": w})
	}
	if signature != "" {
		s.Delta(i, map[string]any{"type": "signature_delta", "signature": signature})
	}
	return s.End(i)
}

// RedactedThinking adds a redacted_thinking block: its data, whole, in
// its start.
func (s *MessagesStream) RedactedThinking(data string) *MessagesStream {
	return s.End(s.Start(map[string]any{"type": "redacted_thinking", "data": data}))
}

// ToolUse adds a tool_use block per call, one after the other as
// Anthropic streams them: the start carries the id, the name and an empty
// input, then the arguments come as input_json_delta pieces of at most
// split bytes (anywhere, even inside a key or an escape, never inside a
// UTF-8 sequence).
func (s *MessagesStream) ToolUse(split int, calls ...Call) *MessagesStream {
	for _, c := range calls {
		i := s.Start(map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}})
		for _, p := range splitPieces(c.Arguments, split) {
			s.Delta(i, map[string]any{"type": "input_json_delta", "partial_json": p})
		}
		s.End(i)
	}
	return s
}

// Stop ends the stream: message_delta with the stop reason (end_turn,
// tool_use, max_tokens, stop_sequence, pause_turn, refusal) and the output
// tokens, then message_stop.
func (s *MessagesStream) Stop(reason string, outputTokens int) *MessagesStream {
	s.Event("message_delta", map[string]any{
		"delta": map[string]any{"stop_reason": reason, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": outputTokens},
	})
	return s.Event("message_stop", map[string]any{})
}

// Error appends an error event (sent with HTTP 200, as Anthropic does
// when it is overloaded mid-stream): typ is the error type
// (overloaded_error, api_error, rate_limit_error...).
func (s *MessagesStream) Error(typ, message string) *MessagesStream {
	return s.Event("error", map[string]any{"error": map[string]any{"type": typ, "message": message}})
}

// Frames returns message_start, a ping, and the frames built so far.
func (s *MessagesStream) Frames() []Frame {
	msg := map[string]any{
		"id": s.id, "type": "message", "role": "assistant", "model": s.model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
	}
	if s.input != nil {
		u := map[string]any{"output_tokens": 1}
		for k, v := range s.input {
			u[k] = v
		}
		msg["usage"] = u
	}
	b, _ := json.Marshal(map[string]any{"type": "message_start", "message": msg}) // plain values: cannot fail
	return append([]Frame{{Event: "message_start", Data: string(b)}, pingFrame}, s.frames...)
}

// Response returns a 200 response streaming the frames (no [DONE]:
// message_stop ends a Messages stream).
func (s *MessagesStream) Response() *Response { return &Response{Frames: s.Frames()} }

// Signature is the signature the mock gives a thinking block, and the
// only one it accepts back for that thinking: the mock's stand-in for
// Anthropic's signed, provider-verified thinking.
func Signature(thinking string) string {
	sum := sha256.Sum256([]byte("mockllm thinking signature\x00" + thinking))
	return base64.StdEncoding.EncodeToString(sum[:])
}

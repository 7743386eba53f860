package mockllm

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// ResponsesStream builds the events of an OpenAI Responses stream: each
// frame carries an "event:" line and a sequence_number, and the stream ends
// with a response.completed, response.incomplete or response.failed event
// (or an error event) instead of [DONE]. The terminal event carries the
// whole response, every finished output item included, so the same frames
// also answer a non-streaming request (the server sends that response as
// the JSON body).
type ResponsesStream struct {
	id     string
	model  string
	seq    int
	frames []Frame
	output []map[string]any // finished output items, by output_index
	usage  map[string]any
}

// NewResponsesStream starts a stream for model with response.created and
// response.in_progress.
func NewResponsesStream(model string) *ResponsesStream {
	return NewResponsesStreamID("resp_mock", model)
}

// NewResponsesStreamID starts a stream whose response has the given id.
func NewResponsesStreamID(id, model string) *ResponsesStream {
	s := &ResponsesStream{id: id, model: model}
	s.event("response.created", map[string]any{"response": s.response("in_progress", nil)})
	s.event("response.in_progress", map[string]any{"response": s.response("in_progress", nil)})
	return s
}

// response is the response object in a given status.
func (s *ResponsesStream) response(status string, extra map[string]any) map[string]any {
	output := make([]any, 0, len(s.output))
	for _, it := range s.output {
		output = append(output, it)
	}
	r := map[string]any{
		"id": s.id, "object": "response", "created_at": 1767225600, "status": status, "model": s.model,
		"output": output, "usage": nil, "error": nil, "incomplete_details": nil,
		"parallel_tool_calls": true, "store": false, "tools": []any{},
	}
	if status != "in_progress" && s.usage != nil {
		r["usage"] = s.usage
	}
	for k, v := range extra {
		r[k] = v
	}
	return r
}

// event appends one event of type typ with fields, numbered in sequence.
func (s *ResponsesStream) event(typ string, fields map[string]any) *ResponsesStream {
	fields["type"] = typ
	fields["sequence_number"] = s.seq
	s.seq++
	b, _ := json.Marshal(fields) // plain values: cannot fail
	s.frames = append(s.frames, Frame{Event: typ, Data: string(b)})
	return s
}

// Event appends an event of type typ whose data is written verbatim (no
// sequence number is added).
func (s *ResponsesStream) Event(typ, data string) *ResponsesStream {
	s.frames = append(s.frames, Frame{Event: typ, Data: data})
	return s
}

// Add appends arbitrary frames (comments, events, verbatim bytes).
func (s *ResponsesStream) Add(f ...Frame) *ResponsesStream {
	s.frames = append(s.frames, f...)
	return s
}

// Text adds a message output item and streams its text one word per
// response.output_text.delta.
func (s *ResponsesStream) Text(text string) *ResponsesStream {
	idx := len(s.output)
	id := fmt.Sprintf("msg_mock_%d", idx)
	s.output = append(s.output, nil) // reserve the index
	s.event("response.output_item.added", map[string]any{"output_index": idx, "item": map[string]any{
		"id": id, "type": "message", "status": "in_progress", "role": "assistant", "content": []any{},
	}})
	part := func(text string) map[string]any {
		return map[string]any{"type": "output_text", "text": text, "annotations": []any{}}
	}
	s.event("response.content_part.added", map[string]any{"item_id": id, "output_index": idx, "content_index": 0, "part": part("")})
	for _, w := range Words(text) {
		s.event("response.output_text.delta", map[string]any{
			"item_id": id, "output_index": idx, "content_index": 0, "delta": w, "logprobs": []any{},
		})
	}
	s.event("response.output_text.done", map[string]any{"item_id": id, "output_index": idx, "content_index": 0, "text": text, "logprobs": []any{}})
	s.event("response.content_part.done", map[string]any{"item_id": id, "output_index": idx, "content_index": 0, "part": part(text)})
	item := map[string]any{"id": id, "type": "message", "status": "completed", "role": "assistant", "content": []any{part(text)}}
	s.output[idx] = item
	return s.event("response.output_item.done", map[string]any{"output_index": idx, "item": item})
}

// Reasoning adds a reasoning output item: each summary is one summary part,
// streamed one word per response.reasoning_summary_text.delta; the item's
// encrypted_content (omitted when empty) arrives with response.output_item.done.
func (s *ResponsesStream) Reasoning(encrypted string, summary ...string) *ResponsesStream {
	idx := len(s.output)
	id := fmt.Sprintf("rs_mock_%d", idx)
	s.output = append(s.output, nil)
	s.event("response.output_item.added", map[string]any{"output_index": idx, "item": map[string]any{
		"id": id, "type": "reasoning", "summary": []any{},
	}})
	parts := make([]any, 0, len(summary))
	for i, text := range summary {
		part := func(text string) map[string]any { return map[string]any{"type": "summary_text", "text": text} }
		s.event("response.reasoning_summary_part.added", map[string]any{"item_id": id, "output_index": idx, "summary_index": i, "part": part("")})
		for _, w := range Words(text) {
			s.event("response.reasoning_summary_text.delta", map[string]any{"item_id": id, "output_index": idx, "summary_index": i, "delta": w})
		}
		s.event("response.reasoning_summary_text.done", map[string]any{"item_id": id, "output_index": idx, "summary_index": i, "text": text})
		s.event("response.reasoning_summary_part.done", map[string]any{"item_id": id, "output_index": idx, "summary_index": i, "part": part(text)})
		parts = append(parts, part(text))
	}
	item := map[string]any{"id": id, "type": "reasoning", "summary": parts}
	if encrypted != "" {
		item["encrypted_content"] = encrypted
	}
	s.output[idx] = item
	return s.event("response.output_item.done", map[string]any{"output_index": idx, "item": item})
}

// FunctionCalls adds one function_call output item per call, in parallel:
// every item is announced (response.output_item.added with its call_id and
// name), then the arguments are split into pieces of at most split bytes
// (anywhere, even inside a key or an escape, never inside a UTF-8 sequence)
// whose response.function_call_arguments.delta events, keyed by the item's
// id (fc_...), interleave by output_index; then each call is done.
func (s *ResponsesStream) FunctionCalls(split int, calls ...Call) *ResponsesStream {
	first := len(s.output)
	pieces := make([][]string, len(calls))
	for i, c := range calls {
		idx := first + i
		s.output = append(s.output, nil)
		s.event("response.output_item.added", map[string]any{"output_index": idx, "item": map[string]any{
			"id": fcID(idx), "type": "function_call", "status": "in_progress", "call_id": c.ID, "name": c.Name, "arguments": "",
		}})
		pieces[i] = splitPieces(c.Arguments, split)
	}
	for more := true; more; {
		more = false
		for i := range calls {
			if len(pieces[i]) == 0 {
				continue
			}
			more = true
			idx := first + i
			s.event("response.function_call_arguments.delta", map[string]any{"item_id": fcID(idx), "output_index": idx, "delta": pieces[i][0]})
			pieces[i] = pieces[i][1:]
		}
	}
	for i, c := range calls {
		idx := first + i
		s.event("response.function_call_arguments.done", map[string]any{"item_id": fcID(idx), "output_index": idx, "name": c.Name, "arguments": c.Arguments})
		item := map[string]any{
			"id": fcID(idx), "type": "function_call", "status": "completed", "call_id": c.ID, "name": c.Name, "arguments": c.Arguments,
		}
		s.output[idx] = item
		s.event("response.output_item.done", map[string]any{"output_index": idx, "item": item})
	}
	return s
}

func fcID(idx int) string { return fmt.Sprintf("fc_mock_%d", idx) }

// splitPieces cuts s into pieces of at most n bytes, never inside a UTF-8
// sequence (a character longer than n is one piece); n <= 0 is no split.
func splitPieces(s string, n int) []string {
	if n <= 0 {
		n = 1 << 30
	}
	var out []string
	for s != "" {
		k := min(n, len(s))
		for k > 0 && k < len(s) && !utf8.RuneStart(s[k]) {
			k--
		}
		if k == 0 {
			_, k = utf8.DecodeRuneInString(s)
		}
		out = append(out, s[:k])
		s = s[k:]
	}
	return out
}

// Usage sets the usage the terminal event reports: input tokens (cached
// ones included, as OpenAI counts them), of which cached, and output tokens,
// of which reasoning.
func (s *ResponsesStream) Usage(input, cached, output, reasoning int) *ResponsesStream {
	s.usage = map[string]any{
		"input_tokens":          input,
		"input_tokens_details":  map[string]any{"cached_tokens": cached},
		"output_tokens":         output,
		"output_tokens_details": map[string]any{"reasoning_tokens": reasoning},
		"total_tokens":          input + output,
	}
	return s
}

// Completed ends the stream with response.completed.
func (s *ResponsesStream) Completed() *ResponsesStream {
	return s.event("response.completed", map[string]any{"response": s.response("completed", nil)})
}

// Incomplete ends the stream with response.incomplete for reason
// (max_output_tokens, content_filter).
func (s *ResponsesStream) Incomplete(reason string) *ResponsesStream {
	return s.event("response.incomplete", map[string]any{"response": s.response("incomplete", map[string]any{
		"incomplete_details": map[string]any{"reason": reason},
	})})
}

// Failed ends the stream with response.failed carrying an error.
func (s *ResponsesStream) Failed(code, message string) *ResponsesStream {
	return s.event("response.failed", map[string]any{"response": s.response("failed", map[string]any{
		"error": map[string]any{"code": code, "message": message},
	})})
}

// Error appends an error event (sent with HTTP 200, as OpenAI does for rate
// limits and failures during a stream).
func (s *ResponsesStream) Error(code, message string) *ResponsesStream {
	return s.event("error", map[string]any{"code": code, "message": message, "param": nil})
}

// Frames returns the frames built so far.
func (s *ResponsesStream) Frames() []Frame { return append([]Frame(nil), s.frames...) }

// Response returns a 200 response streaming the frames (no [DONE]: the
// Responses API has none).
func (s *ResponsesStream) Response() *Response { return &Response{Frames: s.Frames()} }

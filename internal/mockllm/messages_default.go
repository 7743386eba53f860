package mockllm

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
)

// defaultMessages is Default's answer to an Anthropic Messages request,
// the same behaviour in the Messages shape:
//   - with thinking asked for (the request's thinking), the answer opens
//     with a thinking block signed by Signature;
//   - tools offered and the last message the user's own words (no
//     tool_result): a short text, then every offered tool (up to MaxTools)
//     as tool_use blocks, arguments split into input_json_delta pieces;
//   - the last message holding tool results: text reporting each result
//     since the last tool_use;
//   - otherwise text.
//
// Every answer reports usage and ends with message_stop. Like Anthropic,
// it refuses (400 invalid_request_error) a request with thinking on whose
// assistant message before the tool results does not open with its
// thinking, and any thinking block whose signature is not the one it gave.
func defaultMessages(o DefaultOptions, req *Request, calls *atomic.Int64) *Response {
	if r := checkThinkingReplay(req); r != nil {
		return r
	}
	s := NewMessagesStream(o.Model).Usage(estimateTokens(req), 0, 0)
	last := req.LastAnthropic()
	results := last.Content.Of("tool_result")
	if req.Thinking {
		thinking := "The user wrote: " + clip(last.Content.Text(), 80) + ". I will answer from what I have."
		if len(req.Tools) > 0 && len(results) == 0 {
			thinking = "The user wrote: " + clip(last.Content.Text(), 80) + ". I will call the tools first."
		}
		s.Thinking(thinking, Signature(thinking))
	}
	switch {
	case len(req.Tools) > 0 && last.Role == "user" && len(results) == 0:
		cs := defaultCalls(o, req.Tools, last.Content.Text(), "toolu_mock", calls)
		s.Text("Let me check. ").ToolUse(o.Split, cs...).Stop("tool_use", 20*len(cs))
	case len(results) > 0:
		text := answerFromToolResults(req.AnthropicMessages)
		s.Text(text).Stop("end_turn", len(Words(text)))
	default:
		text := "Hello from the mock provider. You said: " + clip(last.Content.Text(), 200)
		s.Text(text).Stop("end_turn", len(Words(text)))
	}
	r := s.Response()
	r.Latency = o.Latency
	return r
}

// answerFromToolResults reports the tool_result blocks of the last
// message, naming each by the tool_use it answers.
func answerFromToolResults(msgs []AnthropicMessage) string {
	names := map[string]string{}
	for _, m := range msgs {
		for _, b := range m.Content.Of("tool_use") {
			names[b.ID] = b.Name
		}
	}
	var parts []string
	for _, b := range msgs[len(msgs)-1].Content.Of("tool_result") {
		name := names[b.ToolUseID]
		if name == "" {
			name = "a tool"
		}
		parts = append(parts, fmt.Sprintf("%s said %q", name, clip(b.Content.Text(), 200)))
	}
	return "Here is what I found: " + strings.Join(parts, "; ") + "."
}

// checkThinkingReplay answers the 400s Anthropic gives a request with
// thinking on: a thinking block whose signature the mock did not give
// it, or tool results whose assistant message does not open with its
// thinking. It returns nil for a request it would serve.
func checkThinkingReplay(req *Request) *Response {
	if !req.Thinking {
		return nil
	}
	msgs := req.AnthropicMessages
	for i, m := range msgs {
		for j, b := range m.Content {
			if b.Type == "thinking" && b.Signature != Signature(b.Thinking) {
				return AnthropicError(http.StatusBadRequest, "invalid_request_error",
					fmt.Sprintf("messages.%d.content.%d: Invalid `signature` in `thinking` block", i, j), nil)
			}
		}
	}
	n := len(msgs)
	if n < 2 || len(msgs[n-1].Content.Of("tool_result")) == 0 || msgs[n-2].Role != "assistant" || len(msgs[n-2].Content) == 0 {
		return nil
	}
	if first := msgs[n-2].Content[0].Type; first != "thinking" && first != "redacted_thinking" {
		return AnthropicError(http.StatusBadRequest, "invalid_request_error", fmt.Sprintf(
			"messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, "+
				"a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks).", n-2, first), nil)
	}
	return nil
}

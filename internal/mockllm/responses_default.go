package mockllm

import (
	"fmt"
	"strings"
	"sync/atomic"
)

// defaultResponses is Default's answer to a Responses request, the same
// behaviour in the Responses shape:
//   - tools offered and the last input item a user message: a short message,
//     then every offered tool (up to MaxTools) called in parallel, arguments
//     split into interleaved deltas;
//   - the last input item a function_call_output: text reporting each
//     function_call_output since the last function_call;
//   - otherwise text.
//
// Every answer reports usage and ends with response.completed.
func defaultResponses(o DefaultOptions, req *Request, calls *atomic.Int64) *Response {
	s := NewResponsesStream(o.Model)
	last := req.LastInput()
	prompt := estimateTokens(req)
	switch {
	case len(req.Tools) > 0 && last.IsMessage("user"):
		cs := defaultCalls(o, req.Tools, last.Text(), "call_mock", calls)
		s.Text("Let me check. ").FunctionCalls(o.Split, cs...).Usage(prompt, 0, 20*len(cs), 0)
	case last.Type == "function_call_output":
		text := answerFromOutputs(req.Input)
		s.Text(text).Usage(prompt, 0, len(Words(text)), 0)
	default:
		text := "Hello from the mock provider. You said: " + clip(last.Text(), 200)
		s.Text(text).Usage(prompt, 0, len(Words(text)), 0)
	}
	r := s.Completed().Response()
	r.Latency = o.Latency
	return r
}

// answerFromOutputs reports the function_call_output items after the last
// function_call item, naming each by its call.
func answerFromOutputs(items []ResponsesItem) string {
	names := map[string]string{}
	start := 0
	for i, it := range items {
		if it.Type == "function_call" {
			names[it.CallID] = it.Name
			start = i + 1
		}
	}
	var parts []string
	for _, it := range items[start:] {
		if it.Type != "function_call_output" {
			continue
		}
		name := names[it.CallID]
		if name == "" {
			name = "a tool"
		}
		parts = append(parts, fmt.Sprintf("%s said %q", name, clip(it.Output.Text(), 200)))
	}
	if len(parts) == 0 {
		return "I have no tool results to report."
	}
	return "Here is what I found: " + strings.Join(parts, "; ") + "."
}

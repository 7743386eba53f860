package hostile

import (
	"strings"

	"github.com/turnstream/turnstream/internal/mockllm"
)

// FloodPrefix starts the prompt of a turn that Script answers with a flood:
// "flood:<kind>".
const FloodPrefix = "flood:"

// FloodKinds are the provider floods, each of which the worker must end
// with RESPONSE_TOO_LARGE after one provider call.
var FloodKinds = []mockllm.FloodKind{
	mockllm.FloodLine, mockllm.FloodDataLines, mockllm.FloodText, mockllm.FloodReasoning,
	mockllm.FloodFrame, mockllm.FloodArguments, mockllm.FloodToolCalls,
}

// Script answers a prompt "flood:<kind>" with a flood of that kind, of
// floodBytes (or 10,000 tool calls), and any other request as next does.
func Script(floodBytes int64, next mockllm.Script) mockllm.Script {
	return mockllm.ScriptFunc(func(req *mockllm.Request) *mockllm.Response {
		text := req.LastMessage().Text()
		if req.IsResponses() {
			text = req.LastInput().Text()
		}
		kind, ok := strings.CutPrefix(text, FloodPrefix)
		if !ok {
			return next.Respond(req)
		}
		return &mockllm.Response{Flood: &mockllm.Flood{Kind: mockllm.FloodKind(kind), Bytes: floodBytes, Count: 10_000}, Done: true}
	})
}

package providertest

import (
	"encoding/json"
	"testing"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/pkg/wire"
)

// defaultScriptPrompt is the user message of DefaultScriptRequest.
const defaultScriptPrompt = "Combien font 12 * (3 + 4) ? Merci ☕"

// DefaultScriptRequest is a request that mockllm's Default script answers
// with two tool calls: calc and note, whose arguments come from the user's
// words (see CheckDefaultScriptCalls).
func DefaultScriptRequest() *provider.Request {
	return &provider.Request{
		System:   "s",
		Messages: []provider.Message{{Role: wire.RoleUser, Content: defaultScriptPrompt}},
		Tools: []wire.Tool{
			{Name: "calc", Parameters: map[string]any{"type": "object", "properties": map[string]any{"expression": map[string]any{"type": "string"}}}},
			{Name: "note", Parameters: map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}},
		},
	}
}

// CheckDefaultScriptCalls fails t unless calls[0] and calls[1] carry the
// arguments mockllm's Default script gives calc and note for
// DefaultScriptRequest: the expression in the user's words, and the words.
func CheckDefaultScriptCalls(t testing.TB, calls []assemble.ToolCall) {
	t.Helper()
	if len(calls) < 2 {
		t.Fatalf("tool calls = %+v; want calc and note", calls)
	}
	var calc, note map[string]string
	if err := json.Unmarshal([]byte(calls[0].Arguments), &calc); err != nil || calc["expression"] != "12 * (3 + 4)" {
		t.Errorf("calc arguments = %s; want expression 12 * (3 + 4)", calls[0].Arguments)
	}
	if err := json.Unmarshal([]byte(calls[1].Arguments), &note); err != nil || note["text"] != defaultScriptPrompt {
		t.Errorf("note arguments = %s; want the user's words", calls[1].Arguments)
	}
}

package continuation_test

import (
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/continuation"
	"github.com/turnstream/turnstream/internal/provider/responses"
	"github.com/turnstream/turnstream/pkg/wire"
)

const systemPrompt = "You are a careful assistant."

var (
	tools = []wire.Tool{
		{Name: "search", Description: "Search the web.", Parameters: map[string]any{
			"type":       "object",
			"properties": map[string]any{"q": map[string]any{"type": "string"}},
			"required":   []any{"q"},
		}},
		{Name: "clock", Description: "The time."},
	}
	promptHash  = continuation.SystemPromptHash(systemPrompt)
	toolsetHash = continuation.ToolsetHash(tools)
	epoch       = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
)

// responsesTarget is a Responses provider serving gpt-5 with the test
// prompt and tools.
func responsesTarget(providerID string) continuation.Current {
	return continuation.Current{
		Provider:         providerID,
		API:              responses.API.Name,
		Model:            "gpt-5",
		SystemPromptHash: promptHash,
		ToolsetHash:      toolsetHash,
	}
}

// durable is a valid durable envelope matching responsesTarget("openai").
func durable() *continuation.Envelope {
	n := int64(1234)
	return &continuation.Envelope{
		SchemaVersion:    continuation.SchemaVersion,
		Provider:         "openai",
		Mode:             responses.API.CursorMode,
		ModelName:        "gpt-5",
		SystemPromptHash: promptHash,
		ToolsetHash:      toolsetHash,
		Cursor:           "resp_1",
		Context:          &continuation.ContextFigures{ProviderReportedInputTokens: &n, ContextLimit: 400000, LastUpdatedAt: epoch},
	}
}

// with returns a copy of durable() changed by f.
func with(f func(e *continuation.Envelope)) *continuation.Envelope {
	e := durable()
	f(e)
	return e
}

// mustSerialize serializes e or fails the test.
func mustSerialize(t *testing.T, e *continuation.Envelope) []byte {
	t.Helper()
	b, err := continuation.Serialize(e)
	if err != nil {
		t.Fatalf("Serialize(%+v) error = %v; want nil", e, err)
	}
	return b
}

// equalEnvelopes compares envelopes field by field, times by instant.
func equalEnvelopes(a, b *continuation.Envelope) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.SchemaVersion != b.SchemaVersion || a.Provider != b.Provider || a.Mode != b.Mode || a.ModelName != b.ModelName ||
		a.SystemPromptHash != b.SystemPromptHash || a.ToolsetHash != b.ToolsetHash || a.Cursor != b.Cursor || a.LoopMessages != b.LoopMessages {
		return false
	}
	if a.Context == nil || b.Context == nil {
		return a.Context == b.Context
	}
	ac, bc := a.Context, b.Context
	if (ac.ProviderReportedInputTokens == nil) != (bc.ProviderReportedInputTokens == nil) ||
		ac.ProviderReportedInputTokens != nil && *ac.ProviderReportedInputTokens != *bc.ProviderReportedInputTokens {
		return false
	}
	return ac.ContextLimit == bc.ContextLimit && ac.LastUpdatedAt.Equal(bc.LastUpdatedAt)
}

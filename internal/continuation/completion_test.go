package continuation_test

import (
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/continuation"
	"github.com/turnstream/turnstream/internal/provider/deepseek"
	"github.com/turnstream/turnstream/internal/provider/responses"
)

func TestNewEnvelope(t *testing.T) {
	tokens := int64(1234)
	local := epoch.In(time.FixedZone("CET", 3600))
	base := continuation.Completion{
		Provider: "openai", API: responses.API.Name, Model: "gpt-5",
		SystemPromptHash: promptHash, ToolsetHash: toolsetHash,
		Cursor: "resp_1", InputTokens: &tokens, ContextLimit: 400000,
	}
	change := func(f func(c *continuation.Completion)) continuation.Completion {
		c := base
		f(&c)
		return c
	}
	tests := []struct {
		name string
		in   continuation.Completion
		want *continuation.Envelope
	}{
		{name: "durable keeps the cursor", in: base, want: durable()},
		{
			name: "durable without a response id records replay",
			in:   change(func(c *continuation.Completion) { c.Cursor = "" }),
			want: with(func(e *continuation.Envelope) { e.Mode, e.Cursor = continuation.ModeReplay, "" }),
		},
		{
			name: "replay drops the cursor and loop count",
			in: change(func(c *continuation.Completion) {
				c.Provider, c.API, c.Model, c.LoopMessages = "deepseek", deepseek.API.Name, "deepseek-chat", 5
			}),
			want: with(func(e *continuation.Envelope) {
				e.Provider, e.ModelName, e.Mode, e.Cursor = "deepseek", "deepseek-chat", continuation.ModeReplay, ""
			}),
		},
		{
			name: "turn-local keeps the loop count only",
			in: change(func(c *continuation.Completion) {
				c.Provider, c.API, c.Model, c.LoopMessages = "anthropic", "anthropic_messages", "claude", 6
			}),
			want: with(func(e *continuation.Envelope) {
				e.Provider, e.ModelName, e.Mode, e.Cursor, e.LoopMessages = "anthropic", "claude", continuation.ModeStatelessLoop, "", 6
			}),
		},
		{
			name: "no reported tokens",
			in:   change(func(c *continuation.Completion) { c.InputTokens = nil }),
			want: with(func(e *continuation.Envelope) { e.Context.ProviderReportedInputTokens = nil }),
		},
		{
			name: "no figures at all",
			in:   change(func(c *continuation.Completion) { c.InputTokens, c.ContextLimit = nil, 0 }),
			want: with(func(e *continuation.Envelope) { e.Context = nil }),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := continuation.NewEnvelope(tt.in, local)
			if !equalEnvelopes(got, tt.want) {
				t.Fatalf("NewEnvelope(%+v) = %+v; want %+v", tt.in, got, tt.want)
			}
			if got.Context != nil && got.Context.LastUpdatedAt.Location() != time.UTC {
				t.Errorf("NewEnvelope(...).Context.LastUpdatedAt = %v; want UTC", got.Context.LastUpdatedAt)
			}
			if _, err := continuation.Serialize(got); err != nil {
				t.Errorf("Serialize(NewEnvelope(%+v)) error = %v; want nil", tt.in, err)
			}
		})
	}
}

package continuation_test

import (
	"slices"
	"testing"

	"github.com/turnstream/turnstream/internal/continuation"
	"github.com/turnstream/turnstream/internal/provider/deepseek"
	"github.com/turnstream/turnstream/internal/provider/openaichat"
	"github.com/turnstream/turnstream/pkg/wire"
)

func TestValidate(t *testing.T) {
	target := responsesTarget("openai")
	change := func(f func(c *continuation.Current)) continuation.Current {
		c := target
		f(&c)
		return c
	}
	tests := []struct {
		name string
		env  *continuation.Envelope
		cur  continuation.Current
		want []continuation.Mismatch
	}{
		{name: "match", env: durable(), cur: target},
		{name: "no state", env: nil, cur: target},
		{
			name: "provider mismatch",
			env:  durable(), cur: change(func(c *continuation.Current) { c.Provider = "azure" }),
			want: []continuation.Mismatch{continuation.MismatchProvider},
		},
		{
			name: "model mismatch",
			env:  durable(), cur: change(func(c *continuation.Current) { c.Model = "gpt-5-mini" }),
			want: []continuation.Mismatch{continuation.MismatchModel},
		},
		{
			name: "system prompt mismatch",
			env:  durable(), cur: change(func(c *continuation.Current) {
				c.SystemPromptHash = continuation.SystemPromptHash(systemPrompt + " Be brief.")
			}),
			want: []continuation.Mismatch{continuation.MismatchSystemPrompt},
		},
		{
			name: "toolset mismatch",
			env:  durable(), cur: change(func(c *continuation.Current) { c.ToolsetHash = continuation.ToolsetHash(tools[:1]) }),
			want: []continuation.Mismatch{continuation.MismatchToolset},
		},
		{
			name: "toolset reordered is no mismatch",
			env:  durable(), cur: change(func(c *continuation.Current) {
				c.ToolsetHash = continuation.ToolsetHash([]wire.Tool{tools[1], tools[0]})
			}),
		},
		{
			name: "mode mismatch: same provider now speaks chat completions",
			env:  durable(), cur: change(func(c *continuation.Current) { c.API = openaichat.API.Name }),
			want: []continuation.Mismatch{continuation.MismatchMode},
		},
		{
			name: "everything changed, in order",
			env:  durable(),
			cur: continuation.Current{
				Provider: "deepseek", API: deepseek.API.Name, Model: "deepseek-chat",
				SystemPromptHash: continuation.SystemPromptHash(""), ToolsetHash: continuation.ToolsetHash(nil),
			},
			want: []continuation.Mismatch{
				continuation.MismatchProvider, continuation.MismatchModel, continuation.MismatchMode,
				continuation.MismatchSystemPrompt, continuation.MismatchToolset,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := continuation.Validate(tt.env, tt.cur); !slices.Equal(got, tt.want) {
				t.Errorf("Validate(%+v, %+v) = %v; want %v", tt.env, tt.cur, got, tt.want)
			}
		})
	}
}

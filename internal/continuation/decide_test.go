package continuation_test

import (
	"testing"

	"github.com/turnstream/turnstream/internal/continuation"
	"github.com/turnstream/turnstream/internal/provider/openaichat"
	"github.com/turnstream/turnstream/pkg/wire"
)

func TestDecide(t *testing.T) {
	target := responsesTarget("openai")
	change := func(f func(c *continuation.Current)) continuation.Current {
		c := target
		f(&c)
		return c
	}
	replay := with(func(e *continuation.Envelope) { e.Mode, e.Cursor = continuation.ModeReplay, "" })
	loop := with(func(e *continuation.Envelope) {
		e.Mode, e.Cursor, e.LoopMessages, e.Context = continuation.ModeStatelessLoop, "", 6, nil
	})
	tests := []struct {
		name string
		env  *continuation.Envelope
		cur  continuation.Current
		want continuation.Decision
	}{
		{
			name: "valid durable envelope continues with its cursor",
			env:  durable(), cur: target,
			want: continuation.Decision{Action: continuation.ContinueWithCursor, Cursor: "resp_1"},
		},
		{
			name: "valid durable envelope with the tools reordered",
			env:  durable(), cur: change(func(c *continuation.Current) {
				c.ToolsetHash = continuation.ToolsetHash([]wire.Tool{tools[1], tools[0]})
			}),
			want: continuation.Decision{Action: continuation.ContinueWithCursor, Cursor: "resp_1"},
		},
		{
			name: "provider mismatch degrades",
			env:  durable(), cur: change(func(c *continuation.Current) { c.Provider = "azure" }),
			want: continuation.Decision{Action: continuation.DegradeToReplay, Reason: continuation.ReasonProviderChanged},
		},
		{
			name: "model mismatch degrades",
			env:  durable(), cur: change(func(c *continuation.Current) { c.Model = "gpt-5-mini" }),
			want: continuation.Decision{Action: continuation.DegradeToReplay, Reason: continuation.ReasonModelChanged},
		},
		{
			name: "system prompt mismatch degrades",
			env:  durable(), cur: change(func(c *continuation.Current) { c.SystemPromptHash = continuation.SystemPromptHash("Another prompt.") }),
			want: continuation.Decision{Action: continuation.DegradeToReplay, Reason: continuation.ReasonSystemPromptChanged},
		},
		{
			name: "toolset mismatch degrades",
			env:  durable(), cur: change(func(c *continuation.Current) { c.ToolsetHash = continuation.ToolsetHash(nil) }),
			want: continuation.Decision{Action: continuation.DegradeToReplay, Reason: continuation.ReasonToolsetChanged},
		},
		{
			name: "mode mismatch degrades",
			env:  durable(), cur: change(func(c *continuation.Current) { c.API = openaichat.API.Name }),
			want: continuation.Decision{Action: continuation.DegradeToReplay, Reason: continuation.ReasonModeChanged},
		},
		{
			name: "cursor disabled by configuration degrades",
			env:  durable(), cur: change(func(c *continuation.Current) { c.CursorDisabled = true }),
			want: continuation.Decision{Action: continuation.DegradeToReplay, Reason: continuation.ReasonNoCursorSupport},
		},
		{
			name: "no state starts replay",
			env:  nil, cur: target,
			want: continuation.Decision{Action: continuation.StartReplay, Reason: continuation.ReasonNoState},
		},
		{
			name: "stateless-loop envelope starts replay",
			env:  loop, cur: target,
			want: continuation.Decision{Action: continuation.StartReplay, Reason: continuation.ReasonStatelessLoop},
		},
		{
			name: "stateless-loop envelope on its own turn-local target starts replay",
			env:  loop, cur: change(func(c *continuation.Current) { c.API = "anthropic_messages" }),
			want: continuation.Decision{Action: continuation.StartReplay, Reason: continuation.ReasonStatelessLoop},
		},
		{
			name: "replay envelope starts replay",
			env:  replay, cur: target,
			want: continuation.Decision{Action: continuation.StartReplay, Reason: continuation.ReasonNoCursor},
		},
		{
			name: "replay envelope from another provider starts replay",
			env:  replay, cur: change(func(c *continuation.Current) { c.Provider = "azure" }),
			want: continuation.Decision{Action: continuation.StartReplay, Reason: continuation.ReasonNoCursor},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := continuation.Decide(tt.env, tt.cur); got != tt.want {
				t.Errorf("Decide(%+v, %+v) = %+v; want %+v", tt.env, tt.cur, got, tt.want)
			}
		})
	}
}

func TestDecidePersistence(t *testing.T) {
	tests := []struct {
		name string
		env  *continuation.Envelope
		want bool
	}{
		{"durable cursor envelope is persisted", durable(), true},
		{"durable cursor envelope without figures is persisted", with(func(e *continuation.Envelope) { e.Context = nil }), true},
		{"stateless-loop envelope is filtered out", with(func(e *continuation.Envelope) {
			e.Mode, e.Cursor, e.LoopMessages = continuation.ModeStatelessLoop, "", 6
		}), false},
		{"replay envelope with context figures is persisted", with(func(e *continuation.Envelope) { e.Mode, e.Cursor = continuation.ModeReplay, "" }), true},
		{"replay envelope without context figures is not", with(func(e *continuation.Envelope) {
			e.Mode, e.Cursor, e.Context = continuation.ModeReplay, "", nil
		}), false},
		{"durable mode without a cursor is not", with(func(e *continuation.Envelope) { e.Cursor = "" }), false},
		{"nil is not", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := continuation.DecidePersistence(tt.env); got != tt.want {
				t.Errorf("DecidePersistence(%+v) = %v; want %v", tt.env, got, tt.want)
			}
		})
	}
}

package history

import (
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/pkg/wire"
)

// Messages projects a session log into provider-bound messages: role,
// content, tool calls and tool-call ids only, in log order. Session
// metadata (turn, step, usage, provider) stays behind.
func Messages(log []wire.Message) []provider.Message {
	out := make([]provider.Message, 0, len(log))
	for i := range log {
		m := &log[i]
		out = append(out, provider.Message{
			Role:       m.Role,
			Content:    m.Content,
			ToolCalls:  m.ToolCalls,
			ToolCallID: m.ToolCallID,
		})
	}
	return out
}

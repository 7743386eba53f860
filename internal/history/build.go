package history

import (
	"encoding/json"
	"regexp"
	"slices"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/pkg/wire"
)

// Messages projects a session log into provider-bound messages: role,
// content, tool calls and tool-call ids only, in log order. Session
// metadata (turn, step, usage, provider) stays behind. An answer cut at
// length and continued by the next step is one answer: its parts are
// joined into one assistant message.
func Messages(log []wire.Message) []provider.Message {
	out := make([]provider.Message, 0, len(log))
	joinNext := false
	for i := range log {
		m := &log[i]
		calls := replayCalls(m.ToolCalls)
		if joinNext && m.Role == wire.RoleAssistant && len(out) > 0 {
			prev := &out[len(out)-1]
			prev.Content += m.Content
			prev.ToolCalls = calls
		} else {
			out = append(out, provider.Message{
				Role:       m.Role,
				Content:    m.Content,
				ToolCalls:  calls,
				ToolCallID: m.ToolCallID,
			})
		}
		joinNext = m.Role == wire.RoleAssistant && len(m.ToolCalls) == 0 && m.FinishReason == wire.FinishLength && !m.Synthesized
	}
	return out
}

// UnparseableCall names the placeholder that replays a call whose name or
// arguments no provider would accept: the call keeps its id, so the error
// result that answered it stays paired; its arguments are empty, never
// invented. It describes failed history; nothing runs it.
const UnparseableCall = "unparseable_tool_call"

var replayableName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// replayCalls returns calls as a provider may receive them again.
func replayCalls(calls []wire.Call) []wire.Call {
	out := calls
	for i, c := range calls {
		if replayableName.MatchString(c.Name) && isObject(c.Arguments) {
			continue
		}
		if &out[0] == &calls[0] {
			out = slices.Clone(calls)
		}
		out[i] = wire.Call{ID: c.ID, Name: UnparseableCall, Arguments: "{}"}
	}
	return out
}

func isObject(s string) bool {
	var v map[string]json.RawMessage
	return json.Unmarshal([]byte(s), &v) == nil && v != nil
}

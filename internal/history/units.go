package history

import (
	"github.com/turnstream/turnstream/pkg/wire"
)

// Unit is an atomic piece of history: one message, or a provider tool group
// (the assistant message with tool calls and every matching result). An
// answer cut at length and continued by the next step is one unit with its
// continuation. Units are kept whole or left out whole.
type Unit struct {
	Turn string
	Msgs []wire.Message
	// Group is set for a unit holding tool calls.
	Group bool
	// Complete reports, for a group, that every call has exactly one
	// result and no result answers another call.
	Complete bool
	// Tokens estimates the unit's size in a request.
	Tokens int
}

// Estimate is the token estimate of a text: about four bytes a token, the
// figure every provider's tokenizer lands near for English and JSON.
func Estimate(s string) int { return (len(s) + 3) / 4 }

// messageTokens estimates one message: content, calls and a fixed overhead
// per message for role and framing.
func messageTokens(m *wire.Message) int {
	n := 4 + Estimate(m.Content)
	for _, c := range m.ToolCalls {
		n += 4 + Estimate(c.Name) + Estimate(c.Arguments)
	}
	return n
}

// cutAtLength reports whether m is an answer cut at the output limit that
// the next step continued.
func cutAtLength(m *wire.Message) bool {
	return m.Role == wire.RoleAssistant && len(m.ToolCalls) == 0 && m.FinishReason == wire.FinishLength && !m.Synthesized
}

// Units splits log into atomic units, in order.
func Units(log []wire.Message) []Unit {
	var out []Unit
	for i := 0; i < len(log); {
		u := Unit{Turn: log[i].TurnID}
		// A cut answer joins the assistant message that continues it.
		for i < len(log) && cutAtLength(&log[i]) && i+1 < len(log) && log[i+1].Role == wire.RoleAssistant {
			u.Msgs = append(u.Msgs, log[i])
			i++
		}
		m := log[i]
		u.Msgs = append(u.Msgs, m)
		i++
		if m.Role == wire.RoleAssistant && len(m.ToolCalls) > 0 {
			u.Group = true
			want := make(map[string]int, len(m.ToolCalls))
			for _, c := range m.ToolCalls {
				want[c.ID]++
			}
			complete := true
			got := map[string]int{}
			for i < len(log) && log[i].Role == wire.RoleTool {
				id := log[i].ToolCallID
				if want[id] == 0 {
					complete = false // a result answering no call of this group
				}
				got[id]++
				u.Msgs = append(u.Msgs, log[i])
				i++
			}
			for id, n := range want {
				if n != 1 || got[id] != 1 {
					complete = false
				}
			}
			u.Complete = complete
		}
		for j := range u.Msgs {
			u.Tokens += messageTokens(&u.Msgs[j])
		}
		out = append(out, u)
	}
	return out
}

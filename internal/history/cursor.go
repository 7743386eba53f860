package history

import (
	"github.com/turnstream/turnstream/internal/continuation"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/pkg/wire"
)

// Continuation is what a projection knows to decide whether a destination
// continues a stored response (continuation strategies).
type Continuation struct {
	// Envelope is the session's stored envelope, nil if none.
	Envelope *continuation.Envelope
	// SystemPromptHash and ToolsetHash describe the current turn.
	SystemPromptHash, ToolsetHash string
	// Disabled forbids cursors (after a provider lost one).
	Disabled bool
}

// cursor projects for a destination that continues a stored response: only
// what followed the response the cursor names, with tool results answering
// the provider's own call ids. ok is false when the destination replays:
// no cursor, another target's, or, across turns, an envelope the decision
// degrades (reason set).
func (p *Projection) cursor(d provider.Destination, diag *Diagnostics) (msgs []provider.Message, cursor string, ok bool) {
	c := p.opts.Continuation
	if !d.DurableCursor || c.Disabled {
		return nil, "", false
	}
	log := p.flatLog()
	last := -1
	for i := len(log) - 1; i >= 0; i-- {
		if log[i].Role == wire.RoleAssistant && !log[i].Synthesized {
			last = i
			break
		}
	}
	if last < 0 {
		return nil, "", false
	}
	a := &log[last]
	st := p.states.Of(a)
	if st == nil || st.ResponseID == "" || st.Provider != d.Target.Provider || st.API != d.API || st.Model != d.Target.Model {
		return nil, "", false
	}
	if len(p.sel.Current) == 0 || a.TurnID != p.sel.Current[0].Turn {
		// Across turns the envelope decides: a changed provider, model,
		// system prompt or toolset degrades to replay.
		dec := continuation.Decide(c.Envelope, continuation.Current{
			Provider: d.Target.Provider, API: d.API, Model: d.Target.Model,
			SystemPromptHash: c.SystemPromptHash, ToolsetHash: c.ToolsetHash,
		})
		if dec.Action != continuation.ContinueWithCursor || dec.Cursor != st.ResponseID {
			if dec.Action == continuation.DegradeToReplay {
				diag.Degraded = string(dec.Reason)
			}
			return nil, "", false
		}
	}
	ids := map[string]string{}
	for _, c := range st.Calls {
		ids[c.ID] = c.ProviderID
	}
	for _, m := range log[last+1:] {
		pm := provider.Message{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
		if id, ok := ids[m.ToolCallID]; ok && id != "" {
			pm.ToolCallID = id // the provider knows its calls by its own ids
		}
		msgs = append(msgs, pm)
	}
	return msgs, st.ResponseID, true
}

// flatLog is the selected history's messages in log order.
func (p *Projection) flatLog() []wire.Message {
	var out []wire.Message
	for _, units := range [][]Unit{p.sel.Prior, p.sel.Current} {
		for _, u := range units {
			out = append(out, u.Msgs...)
		}
	}
	return out
}

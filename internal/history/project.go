package history

import (
	"strings"
	"sync"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/pkg/wire"
)

// DefaultEchoCap bounds the replay echo stored for, and sent with, one
// tool-call turn (history.echo_cap).
const DefaultEchoCap = 64 << 10

// DefaultReserve is the fraction of a route's context window the turn loop
// keeps for the answer when it selects history (history.reserve).
const DefaultReserve = 0.25

// Reasons native replay is skipped (coarse, for diagnostics events).
const (
	// Whole destination: the gates.
	SkipAPIMode      = "api_mode"
	SkipProviderMeta = "provider_metadata"
	SkipModelTools   = "model_tools"
	// One turn: replay safety.
	SkipCredential    = "credential_material"
	SkipRedacted      = "arguments_redacted"
	SkipMalformed     = "malformed_group"
	SkipMissingEcho   = "missing_echo"
	SkipOversizedEcho = "oversized_echo"
)

// Options complete a projection.
type Options struct {
	// Summary, when not empty, stands for the dropped units: it is sent as
	// a system message before the selected history.
	Summary string
	// Instruction, when not empty, is sent last as a user message: the
	// request-only continuation or prefill instruction.
	Instruction string
	// EchoCap bounds the echo of one tool-call turn. Default DefaultEchoCap.
	EchoCap int
	// Continuation decides durable cursors for destinations that have them.
	Continuation Continuation
}

// Diagnostics are the counts of one projection (structured-tool-history-*
// events): never content.
type Diagnostics struct {
	// Native is whether the destination passed the gates.
	Native bool
	// Gate is the reason it did not ("" when Native).
	Gate string
	// Selected and Dropped count prior units.
	Selected, Dropped int
	// NativePairs counts call/result pairs replayed natively; FlatGroups the
	// tool groups rendered as text.
	NativePairs, FlatGroups int
	// Unsafe counts turns kept off native replay, by reason.
	Unsafe map[string]int
	// Placeholders counts calls replayed as unparseable_tool_call.
	Placeholders int
	// Echoes counts assistant messages sent with their replay echo.
	Echoes   int
	Messages int
	Summary  bool
	// Cursor is set when the request continues a stored response.
	Cursor bool
	// Degraded is why a stored cursor was not used (provider_changed,
	// model_changed, system_prompt_changed, toolset_changed, ...).
	Degraded string
}

// Projection is one step's history, ready to be projected for each
// destination of its route chain (provider.Projector).
type Projection struct {
	sel    *Selection
	states States
	opts   Options

	mu   sync.Mutex
	diag map[provider.Target]Diagnostics
}

var _ provider.Projector = (*Projection)(nil)

// NewProjection builds the projector of a selection and its loaded states.
func NewProjection(sel *Selection, states States, o Options) *Projection {
	if o.EchoCap <= 0 {
		o.EchoCap = DefaultEchoCap
	}
	return &Projection{sel: sel, states: states, opts: o, diag: map[provider.Target]Diagnostics{}}
}

// Diagnostics returns what the projection for t did.
func (p *Projection) Diagnostics(t provider.Target) (Diagnostics, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	d, ok := p.diag[t]
	return d, ok
}

// gate applies the native replay gates: the API mode (its descriptor's
// Replay.Native), provider metadata and model tool support. There is no
// "OpenAI-compatible means native" shortcut: an API, provider or model
// that does not say it takes native history gets flat history.
func gate(d provider.Destination) string {
	switch {
	case !d.Replay.Native:
		return SkipAPIMode
	case !d.Model.Capabilities.NativeToolHistory:
		return SkipProviderMeta
	case !d.Model.Capabilities.Tools:
		return SkipModelTools
	}
	return ""
}

// Project renders the history for d: native tool groups for turns that are
// replay safe on a destination that passes the gates, flat text otherwise;
// the summary first and the instruction last.
func (p *Projection) Project(d provider.Destination) (provider.Projected, error) {
	diag := Diagnostics{Gate: gate(d), Selected: len(p.sel.Prior), Dropped: len(p.sel.Dropped), Unsafe: map[string]int{}}
	diag.Native = diag.Gate == ""
	if msgs, cursor, ok := p.cursor(d, &diag); ok {
		if p.opts.Instruction != "" {
			msgs = append(msgs, provider.Message{Role: wire.RoleUser, Content: p.opts.Instruction})
		}
		diag.Cursor, diag.Messages = true, len(msgs)
		p.record(d.Target, diag)
		return provider.Projected{Messages: msgs, PreviousResponseID: cursor}, nil
	}
	// The echo is required where the target says so (ReasoningEcho), and
	// sent where the API keeps one and the target made it.
	needEcho := diag.Native && d.Model.Capabilities.ReasoningEcho && d.Replay.Echo != ""
	sendEcho := diag.Native && d.Replay.Echo != ""
	units := append(append([]Unit(nil), p.sel.Prior...), p.sel.Current...)

	unsafe := map[string]string{}
	if diag.Native {
		for _, u := range units {
			if _, seen := unsafe[u.Turn]; seen || !u.Group {
				continue
			}
			if reason := p.unsafe(u, d, needEcho); reason != "" {
				unsafe[u.Turn] = reason
				diag.Unsafe[reason]++
			}
		}
	}
	var out []provider.Message
	if p.opts.Summary != "" {
		out = append(out, provider.Message{Role: wire.RoleSystem, Content: p.opts.Summary})
		diag.Summary = true
	}
	for _, u := range units {
		if u.Group && (!diag.Native || unsafe[u.Turn] != "") {
			out = append(out, flat(u)...)
			diag.FlatGroups++
			continue
		}
		out = p.native(out, u, d, sendEcho, &diag)
	}
	if p.opts.Instruction != "" {
		out = append(out, provider.Message{Role: wire.RoleUser, Content: p.opts.Instruction})
	}
	diag.Messages = len(out)
	p.record(d.Target, diag)
	return provider.Projected{Messages: out}, nil
}

func (p *Projection) record(t provider.Target, d Diagnostics) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.diag[t] = d
}

// unsafe returns why u's turn may not be replayed natively on d, or "":
// native replay is all-or-nothing per turn.
func (p *Projection) unsafe(u Unit, d provider.Destination, needEcho bool) string {
	if !u.Complete {
		return SkipMalformed
	}
	for i := range u.Msgs {
		m := &u.Msgs[i]
		if m.Role != wire.RoleAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		for _, c := range m.ToolCalls {
			if c.ArgumentsRedacted {
				return SkipRedacted
			}
			if containsSecret(c.Arguments) {
				return SkipCredential
			}
		}
		if needEcho {
			st := p.states.Of(m)
			switch {
			case !echoFor(st, d):
				return SkipMissingEcho // absent, or another provider's: stripped
			case len(st.Echo.Value) > p.opts.EchoCap:
				return SkipOversizedEcho
			}
		}
	}
	return ""
}

// echoFor reports whether st holds an echo d may be sent: one of its API
// and provider (and model, where the API's echo is the model's own), never
// another's.
func echoFor(st *StepState, d provider.Destination) bool {
	switch {
	case st == nil || st.Echo == nil || st.Echo.Field != d.Replay.Echo:
		return false
	case st.Provider != d.Target.Provider || st.API != d.API:
		return false
	case d.Replay.EchoSameModel && st.Model != d.Target.Model:
		return false
	}
	return true
}

// native renders u in request shape: a continued answer as one assistant
// message, a group as its assistant message (with its echo where the
// destination takes it) and its results.
func (p *Projection) native(out []provider.Message, u Unit, d provider.Destination, sendEcho bool, diag *Diagnostics) []provider.Message {
	var asst *provider.Message
	for i := range u.Msgs {
		m := &u.Msgs[i]
		switch {
		case m.Role == wire.RoleAssistant && asst != nil && cutAtLength(&u.Msgs[i-1]):
			asst.Content += m.Content
			p.calls(asst, m, d, sendEcho, diag)
		case m.Role == wire.RoleAssistant:
			out = append(out, provider.Message{Role: m.Role, Content: m.Content})
			asst = &out[len(out)-1]
			p.calls(asst, m, d, sendEcho, diag)
		default:
			out = append(out, provider.Message{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, IsError: m.IsError})
			if m.Role == wire.RoleTool {
				diag.NativePairs++
			}
		}
	}
	return out
}

func (p *Projection) calls(asst *provider.Message, m *wire.Message, d provider.Destination, sendEcho bool, diag *Diagnostics) {
	if len(m.ToolCalls) == 0 {
		return
	}
	calls, placeholders := replayCalls(m.ToolCalls)
	asst.ToolCalls = calls
	diag.Placeholders += placeholders
	if sendEcho {
		if st := p.states.Of(m); echoFor(st, d) && len(st.Echo.Value) <= p.opts.EchoCap {
			v := st.Echo.Value
			asst.Reasoning = &v
			diag.Echoes++
		}
	}
}

// flat renders a tool group as text: the assistant's words with each call
// described, then each result as a user message. Stored arguments are used
// as stored (redacted where they held secrets); nothing else is added.
func flat(u Unit) []provider.Message {
	var out []provider.Message
	names := map[string]string{}
	var text strings.Builder
	for i := range u.Msgs {
		m := &u.Msgs[i]
		switch m.Role {
		case wire.RoleAssistant:
			text.WriteString(m.Content)
			for _, c := range m.ToolCalls {
				names[c.ID] = c.Name
				if text.Len() > 0 {
					text.WriteString("\n")
				}
				text.WriteString("[called tool " + c.Name + " with arguments " + c.Arguments + "]")
			}
		case wire.RoleTool:
			if text.Len() > 0 {
				out = append(out, provider.Message{Role: wire.RoleAssistant, Content: text.String()})
				text.Reset()
			}
			label := "result"
			if m.IsError {
				label = "error"
			}
			name := names[m.ToolCallID]
			if name == "" {
				name = "a tool"
			}
			out = append(out, provider.Message{Role: wire.RoleUser, Content: "[" + label + " of tool " + name + ": " + m.Content + "]"})
		default:
			out = append(out, provider.Message{Role: m.Role, Content: m.Content})
		}
	}
	if text.Len() > 0 {
		out = append(out, provider.Message{Role: wire.RoleAssistant, Content: text.String()})
	}
	return out
}

package history

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/turnstream/turnstream/pkg/wire"
)

// ReplayVersion versions StepState.
const ReplayVersion = 1

// StepState is what a finalized step leaves in worker-only state for later
// requests (LLM-PI-REPLAY): which provider answered through which API and
// model, its response identity and raw stop reason, how many blocks it had
// and their signatures, the mapping of each normalized tool-call id to the
// provider's own, and, only where the destination requires it and the turn
// is safe, the provider's replay echo. It is never published.
type StepState struct {
	V          int         `json:"v"`
	Step       int         `json:"step"`
	API        string      `json:"api"`
	Provider   string      `json:"provider"`
	Model      string      `json:"model"`
	ResponseID string      `json:"response_id,omitempty"`
	StopReason string      `json:"stop_reason,omitempty"`
	Blocks     int         `json:"blocks"`
	Signatures []string    `json:"signatures,omitempty"`
	Calls      []CallIDs   `json:"calls,omitempty"`
	Attempts   int         `json:"attempts"`
	Usage      *wire.Usage `json:"usage,omitempty"`
	// Echo is the replay state the API keeps of this tool-call step
	// (DeepSeek thinking mode's reasoning_content, Anthropic's signed
	// thinking blocks, Responses encrypted reasoning), bounded by the cap.
	Echo *Echo `json:"echo,omitempty"`
}

// Echo is stored provider replay echo.
type Echo struct {
	// Field names the echo (its API's Replay.Echo), e.g.
	// "reasoning_content".
	Field string `json:"field"`
	Value string `json:"value"`
}

// CallIDs maps a normalized tool-call id to the provider's original.
type CallIDs struct {
	ID         string `json:"id"`
	ProviderID string `json:"provider_id"`
}

// StateKey is the worker-only state key of a turn's step.
func StateKey(session, turn string, step int) string {
	return session + "." + turn + "." + strconv.Itoa(step)
}

// Valid checks a restored state against the message it belongs to:
// version, source identity, and the calls it maps. An invalid state is
// treated as absent: no echo, no cursor.
func (s *StepState) Valid(m *wire.Message) bool {
	if s == nil || s.V != ReplayVersion || s.API == "" || s.Provider == "" || s.Model == "" {
		return false
	}
	if s.Provider != m.Provider || s.Model != m.Model || s.Step != m.Step {
		return false
	}
	if len(s.Calls) != len(m.ToolCalls) {
		return false
	}
	for i, c := range s.Calls {
		if c.ID != m.ToolCalls[i].ID {
			return false
		}
	}
	return s.Blocks >= len(m.ToolCalls)
}

// StateReader reads worker-only state.
type StateReader interface {
	Get(ctx context.Context, key string) ([]byte, bool, error)
}

// States are the step states of a selection, keyed by turn and step.
type States map[stepKey]*StepState

type stepKey struct {
	turn string
	step int
}

// Load reads the state of every assistant message that made tool calls in
// the selected units (replay needs their echo and ids), and of the last
// provider answer (its response is the cursor a destination may continue).
// A state that does not decode is absent.
func Load(ctx context.Context, r StateReader, session string, sel *Selection) (States, error) {
	out := States{}
	if r == nil {
		return out, nil
	}
	var wanted []*wire.Message
	var last *wire.Message
	for _, units := range [][]Unit{sel.Prior, sel.Current} {
		for _, u := range units {
			for i := range u.Msgs {
				m := &u.Msgs[i]
				if m.Role != wire.RoleAssistant || m.Synthesized {
					continue
				}
				last = m
				if len(m.ToolCalls) > 0 {
					wanted = append(wanted, m)
				}
			}
		}
	}
	if last != nil && len(last.ToolCalls) == 0 {
		wanted = append(wanted, last)
	}
	for _, m := range wanted {
		b, ok, err := r.Get(ctx, StateKey(session, m.TurnID, m.Step))
		if err != nil {
			return nil, err
		}
		var s StepState
		if ok && json.Unmarshal(b, &s) == nil {
			out[stepKey{m.TurnID, m.Step}] = &s
		}
	}
	return out, nil
}

// Of returns the valid state of m, or nil.
func (s States) Of(m *wire.Message) *StepState {
	st := s[stepKey{m.TurnID, m.Step}]
	if !st.Valid(m) {
		return nil
	}
	return st
}

package history

import (
	"crypto/sha256"

	"github.com/turnstream/turnstream/pkg/wire"
)

// TurnState is what a turn has durably done, derived from the session log
// alone, so a redelivered turn resumes where the last worker stopped: its
// spent budgets included.
type TurnState struct {
	// Start is the index in the log of the turn's first message, len(log)
	// if it has none.
	Start int
	// Inputs counts the turn's input messages already appended.
	Inputs int
	// Steps counts the turn's provider steps: its assistant messages,
	// runtime-written ones excepted.
	Steps int
	// ToolCalls counts the tool calls the turn's assistant messages made.
	ToolCalls int
	// Last is the turn's last assistant message, nil if none.
	Last *wire.Message
	// Answered maps the call ids of Last that already have a tool message.
	Answered map[string]bool
	// Failures counts the turn's failed tool results by tool and outcome.
	Failures map[Failure]int
}

// Failure identifies a tool failure outcome: the tool and a digest of what
// it answered (kept in memory only, never published).
type Failure struct {
	Tool    string
	Outcome [sha256.Size]byte
}

// Pending returns Last's calls without a tool message, in call order.
func (s *TurnState) Pending() []wire.Call {
	if s.Last == nil {
		return nil
	}
	var out []wire.Call
	for _, c := range s.Last.ToolCalls {
		if !s.Answered[c.ID] {
			out = append(out, c)
		}
	}
	return out
}

// Continuing reports whether Last stopped on length with visible text and
// no tool calls: the next step asks the model to continue it.
func (s *TurnState) Continuing() bool {
	return s.Last != nil && len(s.Last.ToolCalls) == 0 && s.Last.FinishReason == wire.FinishLength && !s.Last.Synthesized
}

// Done reports whether the turn's last assistant message ended it: it made
// no tool calls and does not wait for a continuation.
func (s *TurnState) Done() bool {
	return s.Last != nil && len(s.Last.ToolCalls) == 0 && !s.Continuing()
}

// RepeatedFailures returns the largest number of identical failures of one
// tool in the turn.
func (s *TurnState) RepeatedFailures() int {
	n := 0
	for _, c := range s.Failures {
		n = max(n, c)
	}
	return n
}

// StateOf derives turn's state from a session log. A session's turns never
// overlap, so the turn's messages are the log's tail.
func StateOf(log []wire.Message, turn string) TurnState {
	s := TurnState{Start: len(log), Answered: map[string]bool{}, Failures: map[Failure]int{}}
	for i := len(log) - 1; i >= 0 && log[i].TurnID == turn; i-- {
		s.Start = i
	}
	names := map[string]string{}
	for i := s.Start; i < len(log); i++ {
		m := &log[i]
		switch {
		case m.Step == 0 && (m.Role == wire.RoleUser || m.Role == wire.RoleSystem):
			s.Inputs++
		case m.Role == wire.RoleAssistant:
			if !m.Synthesized {
				s.Steps++
			}
			s.ToolCalls += len(m.ToolCalls)
			s.Last = m
			s.Answered = map[string]bool{}
			for _, c := range m.ToolCalls {
				names[c.ID] = c.Name
			}
		case m.Role == wire.RoleTool:
			s.Answered[m.ToolCallID] = true
			if m.IsError {
				s.Failures[Failure{Tool: names[m.ToolCallID], Outcome: sha256.Sum256([]byte(m.Content))}]++
			}
		}
	}
	return s
}

package history

import "github.com/turnstream/turnstream/pkg/wire"

// TurnState is what a turn has durably done, derived from the session log
// alone, so a redelivered turn resumes where the last worker stopped.
type TurnState struct {
	// Start is the index in the log of the turn's first message, len(log)
	// if it has none.
	Start int
	// Inputs counts the turn's input messages already appended.
	Inputs int
	// Steps counts the turn's assistant messages (provider steps finalized).
	Steps int
	// ToolCalls counts the tool calls the turn's assistant messages made.
	ToolCalls int
	// Last is the turn's last assistant message, nil if none.
	Last *wire.Message
	// Answered maps the call ids of Last that already have a tool message.
	Answered map[string]bool
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

// Done reports whether the turn's last assistant message ended it: it made
// no tool calls.
func (s *TurnState) Done() bool { return s.Last != nil && len(s.Last.ToolCalls) == 0 }

// StateOf derives turn's state from a session log. A session's turns never
// overlap, so the turn's messages are the log's tail.
func StateOf(log []wire.Message, turn string) TurnState {
	s := TurnState{Start: len(log), Answered: map[string]bool{}}
	for i := len(log) - 1; i >= 0 && log[i].TurnID == turn; i-- {
		s.Start = i
	}
	for i := s.Start; i < len(log); i++ {
		m := &log[i]
		switch {
		case m.Step == 0:
			s.Inputs++
		case m.Role == wire.RoleAssistant:
			s.Steps++
			s.ToolCalls += len(m.ToolCalls)
			s.Last = m
			s.Answered = map[string]bool{}
		case m.Role == wire.RoleTool:
			s.Answered[m.ToolCallID] = true
		}
	}
	return s
}

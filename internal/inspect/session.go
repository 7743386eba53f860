package inspect

import (
	"slices"
	"time"

	"github.com/turnstream/turnstream/pkg/wire"
)

// Session is a session's turns as the streams hold them.
type Session struct {
	SessionID string `json:"session_id"`
	// Turns are in the order of their first record.
	Turns []TurnSummary `json:"turns"`
	// Messages counts the session log's messages.
	Messages  int  `json:"messages"`
	Skipped   int  `json:"skipped,omitempty"`
	Truncated bool `json:"truncated,omitempty"`
}

// TurnSummary is one turn of a session, from its events and messages.
type TurnSummary struct {
	// TurnID is "" for a rejected request whose turn id was unreadable.
	TurnID    string        `json:"turn_id"`
	Outcome   string        `json:"outcome,omitempty"`
	Reason    string        `json:"reason,omitempty"`
	Started   time.Time     `json:"started"`
	Duration  time.Duration `json:"duration_ns,omitempty"`
	Steps     int           `json:"steps"`
	ToolCalls int           `json:"tool_calls"`
	Messages  int           `json:"messages"`
	Usage     wire.Usage    `json:"usage"`
	// Events counts the turn's events.
	Events int `json:"events"`
}

// BuildSession lays out the records of one session, turn by turn.
func BuildSession(session string, rec Records) *Session {
	s := &Session{SessionID: session, Messages: len(rec.Messages), Skipped: rec.Skipped, Turns: []TurnSummary{}}
	index := map[string]int{}
	turnOf := func(id string, at time.Time) *TurnSummary {
		i, ok := index[id]
		if !ok || id == "" {
			i = len(s.Turns)
			index[id] = i
			s.Turns = append(s.Turns, TurnSummary{TurnID: id, Started: at})
		}
		return &s.Turns[i]
	}
	steps := map[string]map[int]bool{}
	for i := range rec.Events {
		ev, at := &rec.Events[i].Record, rec.Events[i].Time
		t := turnOf(ev.TurnID, at)
		t.Events++
		if ev.Step > 0 {
			if steps[ev.TurnID] == nil {
				steps[ev.TurnID] = map[int]bool{}
			}
			steps[ev.TurnID][ev.Step] = true
			t.Steps = len(steps[ev.TurnID])
		}
		if ev.Type == wire.EventToolDispatched {
			t.ToolCalls++
		}
		if ev.Terminal() {
			t.Outcome, t.Reason = ev.Type, str(ev, "reason")
			t.Duration = at.Sub(t.Started)
		}
	}
	for i := range rec.Messages {
		m, at := &rec.Messages[i].Record, rec.Messages[i].Time
		t := turnOf(m.TurnID, at)
		t.Messages++
		if m.Role == wire.RoleAssistant && m.Usage != nil {
			t.Usage.Add(*m.Usage)
		}
		if at.Before(t.Started) {
			t.Started = at
		}
	}
	slices.SortStableFunc(s.Turns, func(a, b TurnSummary) int { return a.Started.Compare(b.Started) })
	return s
}

package client

import (
	"context"
	"errors"
	"io"

	"github.com/turnstream/turnstream/pkg/wire"
)

// Result is what Wait collected from a turn.
type Result struct {
	// Terminal is the event that ended the turn: turn.completed,
	// turn.failed or turn.rejected. A failed or rejected turn is a Result,
	// not an error.
	Terminal wire.SessionEvent
	// Messages are the turn's finalized messages in session-log order.
	Messages []wire.Message
	// Events are the turn's events in stream order, Terminal last.
	Events []wire.SessionEvent
	// Chunks counts the chunks delivered.
	Chunks int
	// Text is the turn's answer: the content of its last assistant
	// message, joined to the parts before it that were cut at the output
	// limit (finish_reason length) and continued by the next step.
	Text string

	cut bool // the last assistant message was cut at length
}

// Wait consumes the turn to its end and collects what Next delivered from
// now on (updates already returned by Next are not in the Result). It
// returns an error only when following fails or ctx ends.
func (t *Turn) Wait(ctx context.Context) (*Result, error) {
	r := &Result{}
	for {
		u, err := t.Next(ctx)
		if errors.Is(err, io.EOF) {
			return r, nil
		}
		if err != nil {
			return nil, err
		}
		switch {
		case u.Chunk != nil:
			r.Chunks++
		case u.Message != nil:
			r.Messages = append(r.Messages, *u.Message)
			if m := u.Message; m.Role == wire.RoleAssistant {
				if !r.cut {
					r.Text = ""
				}
				r.Text += m.Content
				r.cut = len(m.ToolCalls) == 0 && m.FinishReason == wire.FinishLength && !m.Synthesized
			}
		case u.Event != nil:
			r.Events = append(r.Events, *u.Event)
			if u.Event.Terminal() {
				r.Terminal = *u.Event
			}
		}
	}
}

package worker

import (
	"context"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/turnstream/turnstream/internal/turn"
	"github.com/turnstream/turnstream/pkg/wire"
)

// cancels maps running turns to the functions that cancel them.
type cancels struct {
	mu      sync.Mutex
	running map[string]map[string]context.CancelCauseFunc // session → turn → cancel
}

func (c *cancels) add(session, turnID string, cancel context.CancelCauseFunc) (remove func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running == nil {
		c.running = map[string]map[string]context.CancelCauseFunc{}
	}
	if c.running[session] == nil {
		c.running[session] = map[string]context.CancelCauseFunc{}
	}
	c.running[session][turnID] = cancel
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.running[session], turnID)
		if len(c.running[session]) == 0 {
			delete(c.running, session)
		}
	}
}

// cancel stops session's turn turnID, or every running turn of the session
// when turnID is empty. It reports how many it stopped.
func (c *cancels) cancel(session, turnID string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for id, fn := range c.running[session] {
		if turnID == "" || id == turnID {
			fn(turn.ErrCancelled)
			n++
		}
	}
	return n
}

// handleCancel is the core NATS handler of the cancel subjects.
func (w *Worker) handleCancel(m *nats.Msg) {
	session := w.subjects.SessionOf(m.Subject)
	if !wire.ValidToken(session) {
		return
	}
	var req wire.Cancel
	if len(m.Data) > 0 {
		if err := wire.Decode(m.Header.Get(wire.HeaderContentType), m.Data, &req); err != nil {
			w.log.Warn().Err(err).Str("session_id", session).Msg("ignoring undecodable cancel request")
			return
		}
	}
	if n := w.cancels.cancel(session, req.TurnID); n > 0 {
		w.log.Info().Str("session_id", session).Str("turn_id", req.TurnID).Int("turns", n).Msg("turn cancelled by request")
	}
}

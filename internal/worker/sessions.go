package worker

import (
	"context"
	"time"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/turn"
	"github.com/turnstream/turnstream/pkg/wire"
)

// sessions adapts internal/bus to the lifecycle's turn.Sessions.
type sessions struct {
	bus      *bus.Bus
	state    *bus.State
	instance string
}

var _ turn.Sessions = (*sessions)(nil)

// Look reads the session (bus.ReadSession: its log, its state and its head
// at once, only what is new since this worker last read it).
func (s *sessions) Look(ctx context.Context, session string) (turn.Look, error) {
	read, err := s.bus.ReadSession(ctx, session)
	if err != nil {
		return nil, err
	}
	return &look{read: read}, nil
}

// look is a session as read before the take.
type look struct{ read *bus.Session }

func (l *look) Head() uint64 { return l.read.Head }
func (l *look) Record(turnID string) ([]byte, bool) {
	e, ok := l.read.Entry(turn.RecordKey(l.read.Name, turnID))
	return e.Value, ok
}

// Take takes the lease from the session as looked at (bus.Take) and keeps
// the session as the holder builds on it: everything an earlier holder
// stored. The chunk tail is read only when an earlier delivery of the turn
// may have published chunks: the turn has a record, or an earlier delivery
// of the request took the lease.
func (s *sessions) Take(ctx context.Context, lk turn.Look, turnID string, seq uint64, codec wire.Codec, admitted func() error) (turn.Held, error) {
	lease, read, err := s.bus.Take(ctx, s.state, lk.(*look).read, turnID, seq, s.instance, admitted)
	if err != nil {
		return nil, err
	}
	h := &held{Lease: lease, read: read, turn: turnID, writer: lease.Turn(codec, read.Log), state: lease.State()}
	if _, ok := h.Record(); ok || lease.Deliveries() > 1 {
		tail, err := s.bus.LastChunk(ctx, read.Name, turnID)
		if err != nil {
			return nil, err
		}
		h.tail = turn.Tail{Step: tail.Step, Attempt: tail.Attempt, Seq: tail.Seq, Marker: tail.Marker}
	}
	return h, nil
}

// held is a taken lease with the session as read after the take.
type held struct {
	*bus.Lease
	read   *bus.Session
	turn   string
	tail   turn.Tail
	writer *bus.TurnWriter
	state  *bus.FencedState
}

func (h *held) Record() ([]byte, bool) {
	e, ok := h.read.Entry(turn.RecordKey(h.read.Name, h.turn))
	return e.Value, ok
}
func (h *held) Log() ([]wire.Message, []time.Time) { return h.read.Log.Messages, h.read.Log.Stored }

func (h *held) Ran(turnID string, seq uint64) (inLog, byRequest bool) {
	log := h.read.Log
	for i, m := range log.Messages {
		if m.TurnID == turnID {
			inLog = true
			if log.Requests[i] == seq {
				return true, true
			}
		}
	}
	return inLog, false
}
func (h *held) Tail() turn.Tail        { return h.tail }
func (h *held) Writer() turn.Writer    { return h.writer }
func (h *held) State() turn.StateStore { return h.state }

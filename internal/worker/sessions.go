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

func (s *sessions) Head(ctx context.Context, session string) (uint64, error) {
	return s.bus.FirstPending(ctx, session)
}

func (s *sessions) Record(ctx context.Context, session, turnID string) ([]byte, bool, error) {
	return s.state.Get(ctx, turn.RecordKey(session, turnID))
}

// Take takes the lease, then reads the session as the holder sees it: the
// log and the chunk tail are read after the fence markers are written, so
// they hold everything an earlier holder stored.
func (s *sessions) Take(ctx context.Context, session, turnID string, seq uint64, codec wire.Codec) (turn.Held, error) {
	lease, err := s.bus.TakeLease(ctx, s.state, session, turnID, seq, s.instance)
	if err != nil {
		return nil, err
	}
	log, err := s.bus.LoadLog(ctx, session)
	if err != nil {
		return nil, err
	}
	tail, err := s.bus.LastChunk(ctx, session, turnID)
	if err != nil {
		return nil, err
	}
	return &held{
		Lease: lease, log: log, writer: lease.Turn(codec, log), state: lease.State(),
		tail: turn.Tail{Step: tail.Step, Attempt: tail.Attempt, Seq: tail.Seq, Marker: tail.Marker},
	}, nil
}

// held is a taken lease with the session as read after the take.
type held struct {
	*bus.Lease
	log    *bus.Log
	tail   turn.Tail
	writer *bus.TurnWriter
	state  *bus.FencedState
}

func (h *held) Log() ([]wire.Message, []time.Time) { return h.log.Messages, h.log.Stored }
func (h *held) Tail() turn.Tail                    { return h.tail }
func (h *held) Writer() turn.Writer                { return h.writer }
func (h *held) State() turn.StateStore             { return h.state }

package worker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

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

// cancelStoreTimeout bounds how long the cancel handler tries to store a
// cancel.
const cancelStoreTimeout = 10 * time.Second

// handleCancel is the core NATS handler of the cancel subjects. Every
// worker receives every cancel (no queue group): the one running the turn
// stops it at once, and each stores a cancel that names a turn (the first
// write wins; the others find it stored), so a delivery that runs later
// honors it (storedCancel). It then looks at its running turns again: a
// delivery made cancellable after the first look read the stored cancels
// before they held this one, and is cancelled now; one made cancellable
// after the second look reads them after, and finds it. A cancel sent as a
// request is answered once stored (wire.Cancel). The store runs beside the
// callback, at most cancelStorers at once; past them a cancel is answered
// not stored.
func (w *Worker) handleCancel(ctx context.Context, m *nats.Msg) {
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
	if req.TurnID != "" && !wire.ValidToken(req.TurnID) {
		w.log.Warn().Str("session_id", session).Msg("ignoring a cancel request with an invalid turn id")
		return
	}
	n := w.cancels.cancel(session, req.TurnID)
	if n > 0 {
		w.log.Info().Str("session_id", session).Str("turn_id", req.TurnID).Int("turns", n).Msg("turn cancelled by request")
	}
	if req.TurnID == "" {
		w.answerCancel(m, session, nil)
		return
	}
	// The store and its answer leave the callback: a slow store must not
	// hold the next cancel, which may be for a running turn.
	select {
	case w.storing <- struct{}{}:
	default:
		w.log.Warn().Str("session_id", session).Str("turn_id", req.TurnID).Int("storing", cap(w.storing)).Msg("cancel not stored: too many being stored")
		w.answerCancel(m, session, errStoreBusy)
		return
	}
	go func() {
		defer func() { <-w.storing }()
		w.storeCancel(ctx, m, session, req.TurnID)
	}()
}

// cancelStorers bounds the cancels one worker stores at once.
const cancelStorers = 16

// errStoreBusy: the worker was storing cancelStorers cancels already.
var errStoreBusy = errors.New("worker: too many cancels being stored")

// storeCancel stores a cancel of session's turn, looks at the running
// turns again, and answers the request.
func (w *Worker) storeCancel(ctx context.Context, m *nats.Msg, session, turnID string) {
	sctx, cancel := context.WithTimeout(ctx, cancelStoreTimeout)
	stored := w.state.StoreCancel(sctx, session, turnID)
	cancel()
	if stored != nil {
		w.log.Error().Err(stored).Str("session_id", session).Str("turn_id", turnID).Msg("cancel not stored")
	}
	if n := w.cancels.cancel(session, turnID); n > 0 {
		w.log.Info().Str("session_id", session).Str("turn_id", turnID).Int("turns", n).Msg("turn cancelled by request")
	}
	w.answerCancel(m, session, stored)
}

// cancelsStored waits for the cancels being stored (Run's exit).
func (w *Worker) cancelsStored() {
	for range cap(w.storing) {
		w.storing <- struct{}{}
	}
	for range cap(w.storing) {
		<-w.storing
	}
}

// answerCancel answers a cancel sent as a request: stored, or not.
func (w *Worker) answerCancel(m *nats.Msg, session string, stored error) {
	if m.Reply == "" {
		return
	}
	answer := &nats.Msg{Subject: m.Reply}
	if stored != nil {
		answer.Header = nats.Header{wire.HeaderCancelError: {wire.CancelNotStored}}
	}
	if err := m.RespondMsg(answer); err != nil {
		w.log.Warn().Err(err).Str("session_id", session).Msg("cancel not answered")
	}
}

// storedCancel starts reading whether a cancel of session's turn is
// stored, and returns how the delivery asks for the answer
// (turn.Delivery.Cancelled). The worker reads it once, after the delivery
// is registered in w.cancels: what is stored later reaches the delivery by
// its cancel function (handleCancel). The read runs while the lease is
// taken; only the delivery's goroutine asks for it.
func (w *Worker) storedCancel(ctx context.Context, session, turnID string) func(context.Context) (bool, error) {
	type answer struct {
		ok  bool
		err error
	}
	read := make(chan answer, 1)
	go func() {
		ok, err := w.state.Cancelled(ctx, session, turnID)
		read <- answer{ok, err}
	}()
	var got *answer
	return func(ctx context.Context) (bool, error) {
		if got == nil {
			select {
			case a := <-read:
				got = &a
			case <-ctx.Done():
				return false, ctx.Err()
			}
		}
		return got.ok, got.err
	}
}

// forgetCancel removes a stored cancel of a turn that ended cancelled. A
// cancel left behind is harmless (its turn never runs again) and bounded
// (bus.MaxStoredCancels): a failure is only logged.
func (w *Worker) forgetCancel(ctx context.Context, session, turnID string, log zerolog.Logger) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelStoreTimeout)
	defer cancel()
	if err := w.state.ForgetCancel(fctx, session, turnID); err != nil {
		log.Warn().Err(err).Msg("stored cancel not removed")
	}
}

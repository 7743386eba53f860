package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/turn"
	"github.com/turnstream/turnstream/pkg/wire"
)

// Reasons a delivery is dead-lettered before its request is read.
const (
	// reasonPoison: an earlier delivery of the request died while it was
	// being decoded and validated. It is never decoded again.
	reasonPoison = wire.ReasonPoison
	// reasonInternal: decoding the request panicked.
	reasonInternal = wire.ReasonInternal
)

// intakeKey is the state key guarding the decode of one submit-stream
// message. It starts with "=", which no session token does.
func intakeKey(seq uint64) string { return intakePrefix + strconv.FormatUint(seq, 10) }

const intakePrefix = "=intake."

// guard is the value of an intake key.
type guard struct {
	// Owner is the worker process that first decoded the request.
	Owner string `json:"owner"`
	// Delivery is the delivery that wrote the guard.
	Delivery uint64 `json:"delivery"`
	// Isolated: the request is being decoded alone in its process,
	// after a death that could not be blamed on it.
	Isolated bool `json:"isolated,omitempty"`
}

// intake is the poison guard around decoding. Before a delivery's request is
// decoded, its intake key is created, naming this worker process; once
// decoding and validation returned, the key is deleted. A delivery that
// finds the key already there knows an earlier delivery died inside decode
// (a crash no recover can catch: a stack overflow, the OOM killer, SIGKILL):
//
//   - one death is never blamed on the request: the process may have been
//     killed for another reason (an operator, a node failure, the OOM
//     killer for another request, a request decoded beside it). The
//     request is decoded once more, alone in its process (no other decode
//     runs beside it);
//   - a request whose isolated decode died too is the culprit: it is
//     dead-lettered at its next delivery without being decoded again. An
//     innocent request caught in a crash thus runs, and a poison one is
//     decoded twice, in at most three deliveries.
//
// Waiting for a decode slot is not decoding: the key is written once the
// slot is taken. A dead-lettered request's key is kept until the bucket's
// TTL.
//
// handled is true when the delivery was settled here (handed back or
// dead-lettered); otherwise req, codec and schemas are the admitted request,
// and admitted reports, once the guard's release is done (it runs while
// the session's lease is taken: turn.Delivery.Admitted), whether the
// request is still this delivery's.
func (w *Worker) intake(ctx context.Context, msg delivery, session string, meta *jetstream.MsgMetadata, log zerolog.Logger) (req *wire.TurnRequest, codec wire.Codec, schemas turn.ToolSchemas, admitted func() error, handled bool) {
	n := len(msg.Data())
	if !w.takeDecodeSlot(ctx, n) {
		w.settle(msg, log, nakSoon) // shutting down
		return nil, nil, nil, nil, true
	}
	w.decodeGate.RLock()
	key := intakeKey(meta.Sequence.Stream)
	mine, _ := json.Marshal(guard{Owner: w.instance, Delivery: meta.NumDelivered})
	created, rev, prev, err := w.state.Create(ctx, key, mine)
	switch {
	case err != nil:
		// The write may have landed all the same (a lost reply): remove
		// it, or the next delivery would take this one for a crash.
		w.release(ctx, key, 0, log)
		w.decodeGate.RUnlock()
		w.releaseDecodeSlot(n)
		log.Warn().Err(err).Msg("cannot write the intake guard; handing the request back")
		w.settle(msg, log, nakLater)
		return nil, nil, nil, nil, true
	case created:
		defer w.releaseDecodeSlot(n)
		defer w.decodeGate.RUnlock()
		return w.decodeGuardedBy(ctx, msg, session, meta, key, rev, log)
	}
	w.decodeGate.RUnlock()
	w.releaseDecodeSlot(n)
	var g guard
	if json.Unmarshal(prev.Value, &g) != nil {
		g.Isolated = true // an unreadable guard blames the request
	}
	if !g.Isolated {
		// Decoded alone in this process: no other decode runs beside it.
		log.Warn().Uint64("died_at_delivery", g.Delivery).Msg("an earlier delivery died decoding this request; decoding it alone")
		w.decodeGate.Lock()
		defer w.decodeGate.Unlock()
		g.Isolated, g.Delivery = true, meta.NumDelivered
		b, _ := json.Marshal(g)
		rev, err := w.state.Update(ctx, key, b, prev.Revision)
		if err != nil {
			log.Warn().Err(err).Msg("cannot mark the intake guard; handing the request back")
			w.settle(msg, log, nakLater)
			return nil, nil, nil, nil, true
		}
		return w.decodeGuardedBy(ctx, msg, session, meta, key, rev, log)
	}
	// The guard's revision moves, so a paused delivery that wakes to
	// release it knows the request was judged without it.
	died := g.Delivery
	g.Delivery = meta.NumDelivered
	b, _ := json.Marshal(g)
	if _, err := w.state.Update(ctx, key, b, prev.Revision); err != nil {
		log.Warn().Err(err).Msg("cannot mark the intake guard; handing the request back")
		w.settle(msg, log, nakLater)
		return nil, nil, nil, nil, true
	}
	log.Error().Uint64("died_at_delivery", died).Bool("isolated", g.Isolated).Msg("an earlier delivery died decoding this request; dead-lettering it")
	w.reject(ctx, msg, session, nil, wire.JSON, &wire.ValidationError{Reason: reasonPoison, Detail: "an earlier delivery died while decoding the request"}, log)
	return nil, nil, nil, nil, true
}

// decodeGuardedBy decodes under the intake guard at revision rev, then
// releases it. If the guard moved meanwhile (this delivery was paused past
// its ack wait, and another one judged the request), it stops: the request
// is that delivery's now, and this one neither rejects nor runs it. An
// admitted request's release runs on while the turn's lease is taken
// (admitted waits for it), so it costs the turn no round trip of its own.
func (w *Worker) decodeGuardedBy(ctx context.Context, msg delivery, session string, meta *jetstream.MsgMetadata, key string, rev uint64, log zerolog.Logger) (*wire.TurnRequest, wire.Codec, turn.ToolSchemas, func() error, bool) {
	req, codec, schemas, rejection := w.decodeGuarded(msg, session, meta, log)
	released := make(chan error, 1)
	go func() { released <- w.release(ctx, key, rev, log) }()
	// The same answer every time it is asked (turn.Delivery.Admitted).
	admitted := sync.OnceValue(func() error {
		if err := <-released; errors.Is(err, bus.ErrFenced) {
			log.Warn().Msg("another delivery judged this request while this one was paused; leaving it")
			return err
		}
		return nil // a release that failed otherwise expires with the bucket's TTL
	})
	if rejection != nil {
		if admitted() != nil {
			return nil, nil, nil, nil, true
		}
		w.reject(ctx, msg, session, req, codec, rejection, log)
		return nil, nil, nil, nil, true
	}
	return req, codec, schemas, admitted, false
}

// decodeGuarded is decode with a panic turned into a rejection.
func (w *Worker) decodeGuarded(msg delivery, session string, meta *jetstream.MsgMetadata, log zerolog.Logger) (req *wire.TurnRequest, codec wire.Codec, schemas turn.ToolSchemas, rejection error) {
	defer func() {
		if p := recover(); p != nil {
			log.Error().Str("panic", fmt.Sprint(p)).Bytes("stack", debug.Stack()).Msg("decoding the request panicked; dead-lettering it")
			req, codec, schemas = &wire.TurnRequest{}, wire.JSON, nil
			rejection = &wire.ValidationError{Reason: reasonInternal, Detail: "decoding the request failed unexpectedly"}
		}
	}()
	return w.decode(msg, session, meta)
}

// release deletes an intake key if its revision is still rev (any, for
// 0). It returns bus.ErrFenced when the guard moved. Another failure (the
// server restarting, a leader election) is retried, backing off, for up to
// releaseFor, under the delivery's heartbeat; then it is only logged: the
// key expires with the bucket's TTL, and until then it only matters if this
// delivery also dies.
func (w *Worker) release(ctx context.Context, key string, rev uint64, log zerolog.Logger) error {
	ctx = context.WithoutCancel(ctx)
	deadline := time.Now().Add(releaseFor)
	for pause := 100 * time.Millisecond; ; pause = min(2*pause, 2*time.Second) {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := w.state.Delete(dctx, key, rev)
		cancel()
		if err == nil || errors.Is(err, bus.ErrFenced) {
			return err
		}
		if time.Now().Add(pause).After(deadline) {
			log.Warn().Err(err).Msg("cannot delete the intake guard; it expires with the bucket's TTL (until then a crash of this delivery would count against the request)")
			return err
		}
		time.Sleep(pause)
	}
}

// releaseFor bounds the retries of an intake guard's release.
const releaseFor = 15 * time.Second

// bigRequest is the body size past which decoding takes a decode slot. A
// request's decoded form, compiled schemas included, can take some twenty
// times its encoded size (a 1 MB request of 36,000 schema properties takes
// 24 MB): without slots, a worker at full concurrency decoding such
// requests would hold concurrency times that. Smaller requests decode in
// microseconds and never wait.
const bigRequest = 16 << 10

// takeDecodeSlot waits for a decode slot if a body of n bytes needs one.
// It returns false if ctx ended first.
func (w *Worker) takeDecodeSlot(ctx context.Context, n int) bool {
	if n <= bigRequest {
		return true
	}
	select {
	case w.decodeSlots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (w *Worker) releaseDecodeSlot(n int) {
	if n > bigRequest {
		<-w.decodeSlots
	}
}

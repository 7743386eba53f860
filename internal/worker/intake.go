package worker

import (
	"context"
	"fmt"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/turn"
	"github.com/turnstream/turnstream/pkg/wire"
)

// Reasons a delivery is dead-lettered before its request is read.
const (
	// reasonPoison: an earlier delivery of the request died while it was
	// being decoded and validated. It is never decoded again.
	reasonPoison = "poison"
	// reasonInternal: decoding or running the request panicked.
	reasonInternal = "internal_error"
)

// intakeKey is the state key guarding the decode of one submit-stream
// message. It starts with "=", which no session token does.
func intakeKey(seq uint64) string { return "=intake." + strconv.FormatUint(seq, 10) }

// intake is the poison guard around decoding. Before a delivery's request is
// decoded, its intake key is created; once decoding and validation returned,
// the key is deleted. A delivery that finds the key already there knows an
// earlier delivery died inside decode (a crash no recover can catch: a stack
// overflow, the OOM killer, SIGKILL), and dead-letters the request without
// decoding it again. A request that kills workers thus gets at most two
// deliveries, the second of which decodes nothing, and its session's next
// turn runs.
//
// The price: a request being decoded when its worker died of something
// else (a kill, another request) is dead-lettered too. The guard covers the
// decode alone, not the wait for a decode slot nor the turn, which for a
// request within the limits is milliseconds, so this is rare; the dead
// letter keeps the request for an operator to submit again.
//
// handled is true when the delivery was settled here (handed back or
// dead-lettered); otherwise req, codec and schemas are the admitted request.
func (w *Worker) intake(ctx context.Context, msg delivery, session string, meta *jetstream.MsgMetadata, log zerolog.Logger) (req *wire.TurnRequest, codec wire.Codec, schemas turn.ToolSchemas, handled bool) {
	// Waiting for a decode slot is not decoding: the guard is written
	// once the slot is taken, so a process that dies holds guards only on
	// the requests it was really decoding.
	n := len(msg.Data())
	if !w.takeDecodeSlot(ctx, n) {
		w.settle(msg, log, nakSoon) // shutting down
		return nil, nil, nil, true
	}
	key := intakeKey(meta.Sequence.Stream)
	created, prev, err := w.state.Create(ctx, key, []byte(strconv.FormatUint(meta.NumDelivered, 10)))
	if err != nil {
		// The write may have landed all the same (a lost reply): remove
		// it, or the next delivery would take this one for a crash.
		w.release(ctx, key, log)
		w.releaseDecodeSlot(n)
		log.Warn().Err(err).Msg("cannot write the intake guard; handing the request back")
		w.settle(msg, log, nakLater)
		return nil, nil, nil, true
	}
	if !created {
		w.releaseDecodeSlot(n)
		log.Error().Str("died_at_delivery", string(prev)).Msg("an earlier delivery died decoding this request; dead-lettering it")
		w.reject(ctx, msg, session, nil, wire.JSON, &wire.ValidationError{Reason: reasonPoison, Detail: "an earlier delivery died while decoding the request"}, log)
		w.release(ctx, key, log)
		return nil, nil, nil, true
	}
	req, codec, schemas, rejection := w.decodeGuarded(msg, session, meta, log)
	w.release(ctx, key, log)
	w.releaseDecodeSlot(n)
	if rejection != nil {
		w.reject(ctx, msg, session, req, codec, rejection, log)
		return nil, nil, nil, true
	}
	return req, codec, schemas, false
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

// release deletes an intake key. A failure is retried briefly, then only
// logged: the key expires with the bucket's TTL, and until then it only
// matters if this delivery also dies.
func (w *Worker) release(ctx context.Context, key string, log zerolog.Logger) {
	ctx = context.WithoutCancel(ctx)
	for i := range 3 {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := w.state.Delete(dctx, key)
		cancel()
		if err == nil {
			return
		}
		if i == 2 {
			log.Error().Err(err).Msg("cannot delete the intake guard; a later crash of this delivery would dead-letter the request")
			return
		}
		time.Sleep(100 * time.Millisecond << i)
	}
}

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

package worker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/tracing"
	"github.com/turnstream/turnstream/internal/turn"
	"github.com/turnstream/turnstream/pkg/wire"
)

// delivery is the part of jetstream.Msg the worker uses.
type delivery interface {
	Data() []byte
	Headers() nats.Header
	Subject() string
	Metadata() (*jetstream.MsgMetadata, error)
	DoubleAck(ctx context.Context) error
	Nak() error
	NakWithDelay(delay time.Duration) error
	Term() error
	InProgress() error
}

// handle runs one delivery of a turn request and settles it. What the
// delivery is and what becomes of its turn is the lifecycle's
// (turn.Lifecycle); the worker decodes it, keeps it alive with heartbeats
// and makes the one ack decision.
func (w *Worker) handle(ctx context.Context, msg delivery, s *slot) {
	if w.loop.Tracer != nil {
		ctx = tracing.Extract(ctx, msg.Headers()) // the client's span, if it sent one
	}
	meta, err := msg.Metadata()
	if err != nil {
		w.log.Error().Err(err).Msg("delivery without metadata; terminating it")
		w.settle(msg, zerolog.Nop(), term)
		return
	}
	log := w.log.With().Uint64("stream_seq", meta.Sequence.Stream).Uint64("delivery", meta.NumDelivered).Logger()
	defer w.metrics.DeliveryStarted(meta.NumDelivered > 1)()
	if w.loop.Probe != nil {
		w.loop.Probe(turn.ProbeFetched)
	}

	// Decoding and validation run under the heartbeat too: a slow one is
	// not redelivered to a second worker meanwhile.
	defer w.beats.add(msg, log)()

	session, err := w.subjects.ParseSubmit(msg.Subject())
	if err != nil {
		w.reject(ctx, msg, "", nil, wire.JSON, err, log) // the "_invalid" session
		return
	}
	// The session is read while the request is decoded (the decode waits
	// for its intake guard): the read is what the turn's lease is taken
	// from.
	looked := make(chan lookResult, 1)
	go func() {
		l, err := w.turns.Sessions.Look(ctx, session)
		looked <- lookResult{l, err}
	}()
	req, codec, schemas, admitted, handled := w.intake(ctx, msg, session, meta, log)
	if handled {
		return
	}
	log = log.With().Str("session_id", req.SessionID).Str("turn_id", req.TurnID).Logger()

	// A cancel may come while the turn starts: register first, then read
	// the stored cancels (see handleCancel).
	turnCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer w.cancels.add(session, req.TurnID, cancel)()
	cancelled := w.storedCancel(ctx, session, req.TurnID)

	d := turn.Delivery{
		Request: req, Codec: codec, Seq: meta.Sequence.Stream,
		// Only spaces the waits: the delivery count is a hint, never the
		// delivery's identity (a restarted server may reset it).
		Waits:   int(meta.NumDelivered) - 1,
		Schemas: schemas, Results: w.openResults(session),
		LastResult: func(ctx context.Context) (uint64, error) { return w.bus.LastResult(ctx, session) },
		Look: func() (turn.Look, error) {
			r := <-looked
			return r.look, r.err
		},
		Admitted:  admitted,
		Cancelled: cancelled,
	}
	// Registered before the first look at the session's order, so the
	// release of the turn it waits for cannot slip past unseen.
	p, canPark := w.parking.add(session)
	if canPark {
		defer w.parking.remove(p)
	}
	v := w.turns.Deliver(turnCtx, d)
	for v.Settle == turn.SettleWait && canPark {
		s.release()
		if !p.wait(w.stopping) || !s.acquire(ctx) {
			log.Info().Msg("shutting down; handing a waiting turn back")
			w.settle(msg, log, nakSoon)
			return
		}
		d.Waits++
		d.Look = nil // read again, after the wait
		v = w.turns.Deliver(turnCtx, d)
	}
	if v.Settle == turn.SettleAck && v.Reason == turn.ReasonCancelled {
		// The turn ended cancelled: its stored cancel, if any, is spent
		// (removed last, not to hold the session's next turn).
		defer w.forgetCancel(ctx, session, req.TurnID, log)
	}
	defer v.Finish(ctx) // after the one ack decision below
	if v.Duplicate != nil {
		// Reported before the ack: a redelivery reports again, stored once.
		if err := w.reportDuplicate(ctx, req, codec, meta.Sequence.Stream, v.Duplicate); err != nil {
			log.Warn().Err(err).Msg("turn.duplicate not stored; handing the request back")
			w.settle(msg, log, nakLater)
			return
		}
	}
	w.metrics.DeliverySettled(v.What, v.Reason, v.Err, meta.Timestamp)
	settledLog(log, v).Str("outcome", v.What).Str("reason", v.Reason).Msg("delivery settled")
	switch v.Settle {
	case turn.SettleAck:
		w.settle(msg, log, ack)
		// A request settled without a lease write (a duplicate) wakes
		// nothing through the lease watch: wake this worker's waiters of
		// the session directly (others re-check on their own).
		defer w.parking.wakeSession(session)
	case turn.SettleWait:
		w.settleAfter(msg, log, v.Delay)
	case turn.SettleRetry:
		w.settle(msg, log, nakLater)
	case turn.SettleHandBack:
		w.settle(msg, log, nakSoon)
	case turn.SettleTerm:
		w.settle(msg, log, term)
		defer w.parking.wakeSession(session)
	case turn.SettleLeave:
		// Another delivery owns the request: settling this one could hand
		// it to a third worker while the owner runs it.
	}
}

// reportDuplicate writes the turn.duplicate event of request seq, which
// resubmits the turn of d.Of.
func (w *Worker) reportDuplicate(ctx context.Context, req *wire.TurnRequest, codec wire.Codec, seq uint64, d *turn.Duplicate) error {
	ev := wire.NewEvent(req.SessionID, req.TurnID, 0, 0, time.Now(), wire.TurnDuplicate{Seq: seq, FirstSeq: d.Of})
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return w.bus.Turn(req.SessionID, req.TurnID, codec, nil).EventOnce(wctx, &ev, "dup:"+req.SessionID+":"+strconv.FormatUint(seq, 10))
}

// settledLog is the level a settled delivery logs at: Error for a turn
// that failed internally (it panicked, or every delivery died: a bug, or
// a crash loop, for an operator to look at), Warn for a turn that failed
// otherwise (its reason says why) and for a delivery that could not
// finish (its error says why), Debug for one that waits for its
// session's earlier turn, Info for the rest (completed, ended, duplicate,
// cancelled by its client, handed back at shutdown).
func settledLog(log zerolog.Logger, v turn.Verdict) *zerolog.Event {
	switch {
	case v.What == wire.EventTurnFailed && (v.Reason == turn.ReasonInternal || v.Reason == turn.ReasonExhausted):
		return log.Error().Err(v.Err)
	case v.What == wire.EventTurnFailed && v.Reason != turn.ReasonCancelled:
		return log.Warn().Err(v.Err)
	case v.Settle == turn.SettleHandBack:
		return log.Info().Err(v.Err)
	case v.Err != nil:
		return log.Warn().Err(v.Err)
	case v.Settle == turn.SettleWait:
		return log.Debug()
	}
	return log.Info()
}

// lookResult is a session read while its request is decoded.
type lookResult struct {
	look turn.Look
	err  error
}

// decode reads, defaults and validates a request, and compiles its tool
// schemas. On rejection it returns what it could read of the request for
// the rejection event.
func (w *Worker) decode(msg delivery, session string, meta *jetstream.MsgMetadata) (*wire.TurnRequest, wire.Codec, turn.ToolSchemas, error) {
	if testHookDecode != nil {
		testHookDecode(msg.Data())
	}
	req := &wire.TurnRequest{}
	codec, err := wire.CodecFor(msg.Headers().Get(wire.HeaderContentType))
	if err != nil {
		return req, wire.JSON, nil, &wire.ValidationError{Reason: wire.ReasonContentType, Detail: err.Error()}
	}
	if err := wire.UnmarshalStrictWithin(codec, msg.Data(), req, w.limits); err != nil {
		var ve *wire.ValidationError
		if errors.As(err, &ve) {
			return &wire.TurnRequest{}, codec, nil, ve // a limit crossed, a key or field named
		}
		return &wire.TurnRequest{}, codec, nil, &wire.ValidationError{Reason: wire.ReasonMalformed, Detail: "request does not decode"}
	}
	if req.TurnID == "" {
		req.TurnID = derivedTurnID(msg.Headers().Get(jetstream.MsgIDHeader), session, meta)
	}
	if err := req.Validate(session, w.limits); err != nil {
		return req, codec, nil, err
	}
	if _, ok := w.cfg.Route(req.Route); !ok {
		return req, codec, nil, &wire.ValidationError{Reason: wire.ReasonUnknownRoute, Field: "route", Detail: "no such route"}
	}
	schemas, err := w.loop.Schemas.Compile(req.Tools)
	if err != nil {
		return req, codec, nil, schemaRejection(req.Tools, err)
	}
	return req, codec, schemas, nil
}

// schemaRejection names the tool parameters a schema error is about.
func schemaRejection(tools []wire.Tool, err error) *wire.ValidationError {
	var se *turn.SchemaError
	if !errors.As(err, &se) {
		return &wire.ValidationError{Reason: wire.ReasonInvalidTool, Field: "tools", Detail: "a parameter schema is not a valid JSON Schema"}
	}
	reason := wire.ReasonInvalidTool
	if se.Reason == turn.SchemaReasonTooLarge {
		reason = wire.ReasonTooLarge
	}
	field := "tools"
	for i, t := range tools {
		if t.Name == se.Tool {
			field = fmt.Sprintf("tools[%d].parameters", i)
			break
		}
	}
	return &wire.ValidationError{Reason: reason, Field: field, Detail: se.Error()}
}

// testHookDecode, when set by a test, sees every request body about to be
// decoded (crash tests kill the process there).
var testHookDecode func(data []byte)

// derivedTurnID is the turn id of a request without one: its Nats-Msg-Id,
// or the turn of a "<session>/<turn>" one (the Go client's, MsgID), else
// one derived from the stored message: "auto-" and its store time and
// stream sequence, base 36. Derived, so every delivery of the request is
// the same turn; unique, where a sequence alone ("t1") collides with the
// ids people write, and with itself once the stream is recreated.
func derivedTurnID(msgID, session string, meta *jetstream.MsgMetadata) string {
	if msgID != "" {
		if turn, ok := strings.CutPrefix(msgID, session+"/"); ok && wire.ValidToken(turn) {
			return turn
		}
		return msgID // an invalid one is rejected (invalid_turn_id)
	}
	return "auto-" + strconv.FormatInt(meta.Timestamp.UnixNano(), 36) + "-" + strconv.FormatUint(meta.Sequence.Stream, 36)
}

// reject reports an invalid request, copies it to the dead-letter subject
// and terminates it: it is never redelivered.
func (w *Worker) reject(ctx context.Context, msg delivery, session string, req *wire.TurnRequest, codec wire.Codec, cause error, log zerolog.Logger) {
	reason := wire.RejectReason(cause)
	var ve *wire.ValidationError
	field := ""
	if errors.As(cause, &ve) {
		field = ve.Field
	}
	w.metrics.Rejected(reason)
	log.Warn().Str("reason", reason).Str("field", field).Msg("rejecting invalid turn request")
	eventSession := session
	if !wire.ValidToken(eventSession) {
		eventSession = "_invalid"
	}
	turnID := ""
	if req != nil && wire.ValidToken(req.TurnID) {
		turnID = req.TurnID
	}
	ev := wire.NewEvent(eventSession, turnID, 0, 0, time.Now(), wire.TurnRejected{Reason: wire.RejectionReason(reason), Field: wire.EventField(field)}) // the content-free form; the dead letter has the whole path
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	writer := w.bus.Turn(eventSession, turnID, codec, nil)
	if err := writer.Event(&ev); err == nil {
		if err := writer.Flush(wctx); err != nil {
			log.Error().Err(err).Msg("turn.rejected event not stored")
		}
	}
	if err := w.bus.DeadLetter(wctx, session, natsMsg(msg), reason, field); err != nil {
		log.Error().Err(err).Msg("dead-letter copy failed")
	}
	w.settle(msg, log, term)
}

func natsMsg(d delivery) *nats.Msg {
	return &nats.Msg{Subject: d.Subject(), Header: d.Headers(), Data: d.Data()}
}

// openResults adapts the bus result follower to turn.Results.
func (w *Worker) openResults(session string) turn.ResultsOpener {
	return func(ctx context.Context, from turn.ResultsFrom) (turn.Results, error) {
		f, err := w.bus.FollowResults(ctx, session, from.After, from.Since)
		if err != nil {
			return nil, err
		}
		return &results{f: f, log: w.log}, nil
	}
}

type results struct {
	f   *bus.ResultFollower
	log zerolog.Logger
}

func (r *results) Next(ctx context.Context) (wire.ToolResult, error) {
	for {
		rec, err := r.f.Next(ctx)
		if err != nil {
			return wire.ToolResult{}, err
		}
		if rec.Err != nil {
			r.log.Warn().Err(rec.Err).Uint64("stream_seq", rec.Seq).Msg("skipping invalid tool result record")
			continue
		}
		return rec.Result, nil
	}
}

func (r *results) Stop() { r.f.Stop() }

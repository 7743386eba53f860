package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/history"
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

// handle runs one delivery of a turn request and settles it.
func (w *Worker) handle(ctx context.Context, msg delivery) {
	meta, err := msg.Metadata()
	if err != nil {
		w.log.Error().Err(err).Msg("delivery without metadata; terminating it")
		w.settle(msg, zerolog.Nop(), term)
		return
	}
	log := w.log.With().Uint64("stream_seq", meta.Sequence.Stream).Uint64("delivery", meta.NumDelivered).Logger()

	// Decoding and validation run under the heartbeat too: a slow one is
	// not redelivered to a second worker meanwhile.
	hbCtx, stopHeartbeat := context.WithCancel(ctx)
	defer stopHeartbeat()
	go w.heartbeat(hbCtx, msg, log)

	session, err := w.subjects.ParseSubmit(msg.Subject())
	if err != nil {
		w.reject(ctx, msg, "", nil, wire.JSON, err, log) // the "_invalid" session
		return
	}
	req, codec, schemas, handled := w.intake(ctx, msg, session, meta, log)
	if handled {
		return
	}
	log = log.With().Str("session_id", req.SessionID).Str("turn_id", req.TurnID).Logger()

	// A cancel may come while the turn waits its turn: register first.
	turnCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer w.cancels.add(session, req.TurnID, cancel)()

	// A turn that ended (its end record exists) never runs again: a
	// redelivery re-publishes its terminal event (deduplicated), a
	// resubmission of the same turn id is acknowledged silently.
	if end, ok, err := w.ended(ctx, req); err != nil {
		log.Warn().Err(err).Msg("cannot read the turn's end record; handing the turn back")
		w.settle(msg, log, nakLater)
		return
	} else if ok {
		if meta.NumDelivered > 1 {
			w.republish(ctx, codec, req, end, log)
		}
		log.Info().Msg("turn already ended; acknowledging without running it again")
		w.settle(msg, log, ack)
		return
	}
	if int(meta.NumDelivered) > w.cfg.Worker.MaxDeliver {
		// Every delivery so far died without ending the turn: end it, so
		// it neither loops forever nor blocks its session.
		log.Error().Msg("deliveries exhausted; failing the turn")
		w.failTurn(ctx, w.bus.Turn(session, req.TurnID, codec, nil), req, reasonExhausted, log)
		w.settle(msg, log, term)
		return
	}

	if ok, err := w.awaitTurnOrder(ctx, session, meta.Sequence.Stream); err != nil || !ok {
		if err != nil {
			log.Warn().Err(err).Msg("cannot check session order; handing the turn back")
			w.settle(msg, log, nakSoon)
		} else {
			log.Info().Msg("request already settled by another delivery")
		}
		return
	}
	sessionLog, err := w.bus.LoadLog(ctx, session)
	if err != nil {
		log.Warn().Err(err).Msg("cannot load session log; handing the turn back")
		w.settle(msg, log, nakLater)
		return
	}
	if sessionLog.Skipped > 0 {
		log.Error().Int("records", sessionLog.Skipped).Msg("session log has records that do not decode; skipping them")
	}
	st := history.StateOf(sessionLog.Messages, req.TurnID)
	if meta.NumDelivered == 1 && st.Start < len(sessionLog.Messages) {
		// A new request for a turn the session already has: a resubmission
		// outside the dedupe window. The same turn id runs once.
		log.Info().Msg("duplicate turn id; acknowledging without running it again")
		w.settle(msg, log, ack)
		return
	}

	lastStep, lastAttempt, err := w.bus.LastAttempt(ctx, session, req.TurnID)
	if err != nil {
		log.Warn().Err(err).Msg("cannot read the chunk log's tail; handing the turn back")
		w.settle(msg, log, nakLater)
		return
	}

	writer := w.bus.Turn(session, req.TurnID, codec, sessionLog)
	out, panicked := w.run(turnCtx, turn.Input{
		Request:     req,
		Log:         sessionLog.Messages,
		Stored:      sessionLog.Stored,
		Delivery:    int(meta.NumDelivered),
		Writer:      writer,
		OpenResults: w.openResults(session),
		LastStep:    lastStep,
		LastAttempt: lastAttempt,
		Schemas:     schemas,
	}, log)
	switch {
	case panicked:
		// A bug, or input that reached one: running it again would panic
		// again. The turn fails, and its session's next turn runs.
		w.failTurn(ctx, writer, req, reasonInternal, log)
		w.settle(msg, log, term)
	case out.Err == nil:
		log.Info().Str("outcome", out.Status).Str("reason", out.Reason).Msg("turn ended")
		w.settle(msg, log, ack)
	case errors.Is(out.Err, bus.ErrFenced):
		// Another delivery of this request owns the session now; this one
		// stops writing and leaves the request to it.
		log.Warn().Err(out.Err).Msg("fenced: another worker owns this turn")
	case errors.Is(out.Err, wire.ErrRecordTooLarge):
		// The same record would not fit on any redelivery either.
		log.Error().Err(out.Err).Msg("a record of the turn does not fit the server; failing the turn")
		w.failTurn(ctx, writer, req, reasonTooLarge, log)
		w.settle(msg, log, term)
	case errors.Is(context.Cause(turnCtx), errShutdown):
		log.Info().Msg("shutting down; handing the turn back to be resumed")
		w.settle(msg, log, nakSoon)
	case int(meta.NumDelivered) >= w.cfg.Worker.MaxDeliver:
		log.Error().Err(out.Err).Msg("last delivery failed; failing the turn")
		w.failTurn(ctx, writer, req, reasonExhausted, log)
		w.settle(msg, log, term)
	default:
		log.Warn().Err(out.Err).Msg("turn interrupted; it will be resumed")
		w.settle(msg, log, nakLater)
	}
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
		req.TurnID = msg.Headers().Get(jetstream.MsgIDHeader)
	}
	if req.TurnID == "" {
		// Deterministic, so every delivery of this request is the same turn.
		req.TurnID = "t" + seqToken(meta.Sequence.Stream)
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

// seqToken renders a stream sequence as a token.
func seqToken(seq uint64) string {
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	b := []byte{}
	for {
		b = append([]byte{digits[seq%36]}, b...)
		seq /= 36
		if seq == 0 {
			return string(b)
		}
	}
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
	log.Warn().Str("reason", reason).Str("field", field).Msg("rejecting invalid turn request")
	eventSession := session
	if !wire.ValidToken(eventSession) {
		eventSession = "_invalid"
	}
	turnID := ""
	if req != nil && wire.ValidToken(req.TurnID) {
		turnID = req.TurnID
	}
	ev := &wire.SessionEvent{
		Type: wire.EventTurnRejected, SessionID: eventSession, TurnID: turnID, Time: time.Now(),
		Payload: map[string]any{"reason": reason},
	}
	if field != "" {
		ev.Payload["field"] = field
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	writer := w.bus.Turn(eventSession, turnID, codec, nil)
	if err := writer.Event(ev); err == nil {
		if err := writer.Flush(wctx); err != nil {
			log.Error().Err(err).Msg("turn.rejected event not stored")
		}
	}
	if err := w.bus.DeadLetter(wctx, session, natsMsg(msg), reason); err != nil {
		log.Error().Err(err).Msg("dead-letter copy failed")
	}
	w.settle(msg, log, term)
}

func natsMsg(d delivery) *nats.Msg {
	return &nats.Msg{Subject: d.Subject(), Header: d.Headers(), Data: d.Data()}
}

// awaitTurnOrder blocks while an earlier request of the session is still
// pending, so a session's turns start in submission order and never
// overlap. It returns false if this request is no longer pending.
func (w *Worker) awaitTurnOrder(ctx context.Context, session string, seq uint64) (bool, error) {
	for {
		first, err := w.bus.FirstPending(ctx, session)
		if err != nil {
			return false, err
		}
		if first == seq {
			return true, nil
		}
		if first == 0 || first > seq {
			return false, nil
		}
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false, ctx.Err()
		}
	}
}

// heartbeat keeps the delivery from being redelivered while it runs.
func (w *Worker) heartbeat(ctx context.Context, msg delivery, log zerolog.Logger) {
	every := w.topology.WorkerConsumerConfig().AckWait / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := msg.InProgress(); err != nil {
				log.Warn().Err(err).Msg("heartbeat failed")
			}
		}
	}
}

// openResults adapts the bus result follower to turn.Results.
func (w *Worker) openResults(session string) turn.ResultsOpener {
	return func(ctx context.Context, since time.Time) (turn.Results, error) {
		f, err := w.bus.FollowResults(ctx, session, since)
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

// reasonTooLarge: a record of the turn exceeds the server's max payload.
const reasonTooLarge = "record_too_large"

// reasonExhausted: every delivery of the turn died without ending it.
const reasonExhausted = "deliveries_exhausted"

// run runs the turn loop; a panic anywhere in it is reported, not fatal.
func (w *Worker) run(ctx context.Context, in turn.Input, log zerolog.Logger) (out turn.Outcome, panicked bool) {
	defer func() {
		if p := recover(); p != nil {
			log.Error().Str("panic", fmt.Sprint(p)).Bytes("stack", debug.Stack()).Msg("the turn panicked; failing it")
			panicked = true
		}
	}()
	return w.loop.Run(ctx, in), false
}

// failTurn ends a turn that cannot finish: its end record, then turn.failed
// with reason.
func (w *Worker) failTurn(ctx context.Context, writer *bus.TurnWriter, req *wire.TurnRequest, reason string, log zerolog.Logger) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	payload := map[string]any{"reason": reason}
	if b, err := json.Marshal(turn.EndRecord{V: 1, Type: wire.EventTurnFailed, Payload: payload}); err == nil {
		if err := w.state.Put(wctx, turn.EndKey(req.SessionID, req.TurnID), b); err != nil {
			log.Error().Err(err).Msg("end record not stored")
		}
	}
	ev := &wire.SessionEvent{Type: wire.EventTurnFailed, SessionID: req.SessionID, TurnID: req.TurnID, Time: time.Now(), Payload: payload}
	if err := writer.Terminal(wctx, ev); err != nil {
		log.Error().Err(err).Msg("turn.failed event not stored")
	}
}

// ended reads a turn's end record.
func (w *Worker) ended(ctx context.Context, req *wire.TurnRequest) (*turn.EndRecord, bool, error) {
	b, ok, err := w.state.Get(ctx, turn.EndKey(req.SessionID, req.TurnID))
	if err != nil || !ok {
		return nil, false, err
	}
	var rec turn.EndRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, false, fmt.Errorf("worker: end record: %w", err)
	}
	return &rec, true, nil
}

// republish writes an ended turn's terminal event again: the delivery that
// recorded the end may have died before publishing it. Its message id
// deduplicates it when it was published.
func (w *Worker) republish(ctx context.Context, codec wire.Codec, req *wire.TurnRequest, end *turn.EndRecord, log zerolog.Logger) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	ev := &wire.SessionEvent{Type: end.Type, SessionID: req.SessionID, TurnID: req.TurnID, Time: time.Now(), Payload: end.Payload}
	if err := w.bus.Turn(req.SessionID, req.TurnID, codec, nil).Terminal(wctx, ev); err != nil {
		log.Error().Err(err).Msg("terminal event not republished")
	}
}

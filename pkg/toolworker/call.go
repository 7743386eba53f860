package toolworker

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/tracing"
	"github.com/turnstream/turnstream/pkg/wire"
)

const (
	// opTimeout bounds each claim write, the result publish and the ack.
	opTimeout = 5 * time.Second
	// publishRetryDelay delays the redelivery of a call whose claim or
	// result could not be written.
	publishRetryDelay = time.Second
	// headerRoom is kept free of the server's max payload for headers.
	headerRoom = 512
	// recordTries bounds the attempts to record a result in its claim.
	recordTries = 3
	// maxSteps bounds the claim steps of one delivery (claim, watch, take
	// over, claim again after a lost race, ...).
	maxSteps = 8
)

// OutcomeUnknownContent is the content of the error result, flagged
// synthesized, that answers a call of a tool not declared idempotent
// (WithIdempotent) whose tool worker stopped while running it: the call is
// not run again, since it may already have taken effect.
const OutcomeUnknownContent = "error: tool outcome unknown: the tool worker running this call stopped before it reported a result; the call may or may not have taken effect"

// Term reasons, coarse and content-free.
const (
	termMalformed    = "malformed"
	termInvalid      = "invalid_tool_call"
	termNameMismatch = "tool_name_mismatch"
	termExpired      = "deadline_passed"
)

// testHookClaimDone, when set, is called once a delivery has recorded its
// result in the claim and before it publishes it. Crash tests use it to die
// there.
var testHookClaimDone func(call wire.ToolCall)

// message is the part of jetstream.Msg a call needs.
type message interface {
	Data() []byte
	Headers() nats.Header
	Subject() string
	Metadata() (*jetstream.MsgMetadata, error)
	InProgress() error
	DoubleAck(context.Context) error
	Nak() error
	NakWithDelay(time.Duration) error
	TermWithReason(string) error
}

// delivery is one delivered, valid call being handled.
type delivery struct {
	m      message
	call   wire.ToolCall
	codec  wire.Codec
	log    zerolog.Logger
	claims jetstream.KeyValue
	key    string
	// seq and num identify the delivery: the call's stream sequence and
	// its delivery count.
	seq, num uint64
	// heartbeat paces in-progress acks, claim renewals and claim reads.
	heartbeat time.Duration
	// leaveDelay delays the redelivery of a call left to a live holder.
	leaveDelay time.Duration
}

// record is the running claim of this delivery at attempt.
func (d *delivery) record(owner string, attempt int) claimRecord {
	return claimRecord{
		State: claimRunning, Owner: owner, StreamSeq: d.seq, Delivery: d.num,
		Attempt: attempt, HeartbeatMS: d.heartbeat.Milliseconds(),
	}
}

func (d *delivery) expired() bool { return !time.Now().Before(d.call.Deadline) }

// settlement is how a delivery ends: the one ack decision, carried out by
// settle.
type settlement struct {
	kind  settleKind
	delay time.Duration // settleNakDelay
	// reason is a settleTerm's term reason.
	reason string
	// answered describes a settleAck's published result, for the log.
	answered *answered
}

type settleKind int

const (
	settleAck      settleKind = iota // the result is stored: ack
	settleNak                        // hand back at once
	settleNakDelay                   // hand back after delay
	settleTerm                       // never run: terminate with reason
)

type answered struct {
	res       wire.ToolResult
	ack       *jetstream.PubAck
	fromClaim bool
}

func nakAfter(d time.Duration) settlement { return settlement{kind: settleNakDelay, delay: d} }
func term(reason string) settlement       { return settlement{kind: settleTerm, reason: reason} }

// handle decides the fate of one delivered call and reports its outcome
// to the observers.
func (t *tool) handle(runCtx context.Context, m message, b binding) {
	start := time.Now()
	ctx := runCtx
	if t.traced {
		ctx = tracing.Extract(ctx, m.Headers())
	}
	ctx, span := t.tracer.Start(ctx, tracing.SpanExecuteTool+" "+t.name,
		trace.WithAttributes(tracing.KeyOperation.String(tracing.OpExecuteTool), tracing.KeyToolName.String(t.name)))
	outcome := t.handleCall(ctx, m, b)
	tracing.End(span, outcome != CallOK && outcome != CallReplayed && outcome != CallRetry, string(outcome),
		tracing.KeyOutcome.String(string(outcome)))
	t.obs.CallDone(t.name, outcome, time.Since(start))
}

// handleCall decides the fate of one delivered call: terminate it, claim
// it and run it, answer it from its claim, or hand it back. Every path
// settles the message exactly once.
func (t *tool) handleCall(runCtx context.Context, m message, b binding) CallOutcome {
	log := t.log
	meta, err := m.Metadata()
	if err == nil {
		log = log.With().Uint64("stream_seq", meta.Sequence.Stream).Uint64("delivered", meta.NumDelivered).Logger()
	} else {
		meta = &jetstream.MsgMetadata{} // unreachable for a fetched message
	}

	var call wire.ToolCall
	if err := wire.Decode(m.Headers().Get(wire.HeaderContentType), m.Data(), &call); err != nil {
		return t.term(log, m, termMalformed, err)
	}
	if err := call.Validate(); err != nil {
		return t.term(log, m, termInvalid, err)
	}
	if subjectTool := strings.TrimPrefix(m.Subject(), t.subjects.Tool("")); call.Name != subjectTool {
		return t.term(log, m, termNameMismatch, nil)
	}
	res := resultOf(call)
	if err := res.Validate(); err != nil {
		return t.term(log, m, termInvalid, err) // a call id no result could carry
	}
	log = log.With().
		Str("session_id", call.SessionID).Str("turn_id", call.TurnID).
		Int("step", call.Step).Str("call_id", call.CallID).Logger()
	trace.SpanFromContext(runCtx).SetAttributes(tracing.ToolCall(call.SessionID, call.TurnID, call.Step, call.Name, call.CallID)...)
	if !time.Now().Before(call.Deadline) {
		return t.term(log, m, termExpired, nil)
	}
	codec, err := wire.CodecFor(m.Headers().Get(wire.HeaderContentType))
	if err != nil { // unreachable: Decode accepted the same header
		return t.term(log, m, termMalformed, err)
	}

	d := &delivery{
		m: m, call: call, codec: codec, log: log,
		claims: b.claims, key: bus.ClaimKey(call.Name, call.SessionID, call.TurnID, call.CallID),
		seq: meta.Sequence.Stream, num: meta.NumDelivered,
		heartbeat:  heartbeatInterval(b.ackWait, time.Until(call.Deadline)),
		leaveDelay: b.ackWait,
	}
	stop := keepalive(m, d.heartbeat, log)
	s := t.process(runCtx, d)
	stop()
	return t.settle(runCtx, d, s)
}

// keepalive acks progress on m every heartbeat until the returned stop is
// called, which returns once the goroutine has exited.
func keepalive(m message, heartbeat time.Duration, log zerolog.Logger) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(heartbeat)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if err := m.InProgress(); err != nil {
					log.Warn().Err(err).Msg("in-progress ack failed")
				}
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// process carries the delivery through its claim: each step judges what
// the delivery has seen of the claim (judge) and does what the verdict
// says. It returns how to settle the delivery.
func (t *tool) process(ctx context.Context, d *delivery) settlement {
	var (
		s seen
		h *held  // the claim this delivery holds (seenHeld)
		f *found // the claim another delivery wrote
	)
	for range maxSteps {
		if ctx.Err() != nil {
			d.log.Info().Msg("call handed back: shutting down")
			return settlement{kind: settleNak}
		}
		if d.expired() {
			return term(termExpired)
		}
		switch v := judge(s, t.idempotent); v {
		case verdictClaim:
			cctx, cancel := context.WithTimeout(ctx, opTimeout)
			var err error
			h, f, err = create(cctx, d.claims, d.key, d.record(t.owner, 1))
			cancel()
			if err != nil {
				d.log.Warn().Err(err).Msg("claiming the call failed; the call will be redelivered")
				return nakAfter(publishRetryDelay)
			}
			s = seenHeld
			if h == nil {
				s = seenOf(f)
			}
		case verdictRun:
			return t.runHeld(ctx, d, h)
		case verdictAnswer:
			d.log.Info().Str("claimer", f.rec.Owner).Int("claim_attempt", f.rec.Attempt).Msg("call already answered; publishing the recorded result")
			return t.publish(ctx, d, f.rec.Result.toolResult(d.call), true)
		case verdictWatch:
			var err error
			if f, s, err = t.watch(ctx, d, f); err != nil {
				if ctx.Err() != nil {
					continue // handed back above
				}
				d.log.Warn().Err(err).Msg("reading the claim failed; the call will be redelivered")
				return nakAfter(publishRetryDelay)
			}
		case verdictLeave:
			d.log.Info().Str("claimer", f.rec.Owner).Int("claim_attempt", f.rec.Attempt).Msg("call claimed by a live tool worker; leaving it")
			return nakAfter(d.leaveDelay)
		case verdictRerun, verdictUnknown:
			rec := d.record(t.owner, f.rec.Attempt+1)
			if v == verdictUnknown {
				rec.State, rec.Result = claimDone, recordResult(unknownResult(d.call))
			}
			cctx, cancel := context.WithTimeout(ctx, opTimeout)
			taken, err := takeover(cctx, d.claims, d.key, f, rec)
			cancel()
			switch {
			case errors.Is(err, errClaimLost):
				s = seenNothing // another delivery got there first: look again
				continue
			case err != nil:
				d.log.Warn().Err(err).Msg("taking the claim over failed; the call will be redelivered")
				return nakAfter(publishRetryDelay)
			}
			ev := d.log.Warn().Str("claimer", f.rec.Owner).Int("claim_attempt", rec.Attempt)
			if v == verdictRerun {
				ev.Msg("the tool worker running this call stopped; running it again (idempotent tool)")
				h, s = taken, seenHeld
				continue
			}
			ev.Msg("the tool worker running this call stopped; answering tool outcome unknown")
			return t.publish(ctx, d, unknownResult(d.call), false)
		}
	}
	d.log.Error().Msg("the claim kept changing; the call will be redelivered")
	return nakAfter(publishRetryDelay)
}

// watch reads the claim f, held by another delivery, every heartbeat, until
// its revision moves or watchWindow has passed without it moving. It returns
// the claim as last read and what that means.
func (t *tool) watch(ctx context.Context, d *delivery, f *found) (*found, seen, error) {
	window := watchWindow(f.rec.heartbeat(), d.heartbeat, time.Until(d.call.Deadline))
	end := time.Now().Add(window)
	for {
		if !sleep(ctx, min(d.heartbeat, time.Until(end))) {
			return f, seenRunning, ctx.Err()
		}
		rctx, cancel := context.WithTimeout(ctx, opTimeout)
		g, err := read(rctx, d.claims, d.key)
		cancel()
		switch {
		case err != nil:
			return f, seenRunning, err
		case g == nil:
			return nil, seenNothing, nil
		case g.rev != f.rev && g.rec.State == claimDone:
			return g, seenDone, nil
		case g.rev != f.rev:
			return g, seenAlive, nil
		case !time.Now().Before(end):
			return g, seenStale, nil
		}
	}
}

// runHeld runs the call under the claim h, records its result in the claim
// (done), and publishes it.
func (t *tool) runHeld(ctx context.Context, d *delivery, h *held) settlement {
	start := time.Now()
	out, lost := t.run(ctx, d, h)
	d.log = d.log.With().Dur("run_ms", time.Since(start)).Logger()
	if lost {
		d.log.Warn().Msg("the claim was taken over while the handler ran; its result is dropped")
		return nakAfter(d.leaveDelay)
	}
	res := resultOf(d.call)
	res.Content, res.IsError = out.Content, out.IsError
	// The drain timeout may have cut the run short: what the handler
	// returned then may not be its outcome. Writes go on regardless.
	cut := ctx.Err() != nil
	ctx = context.WithoutCancel(ctx)
	if cut {
		if cutShort(t.idempotent) == verdictLeave {
			rctx, cancel := context.WithTimeout(ctx, opTimeout)
			if err := h.release(rctx); err != nil {
				d.log.Warn().Err(err).Msg("releasing the claim failed; the next delivery will find it stale")
			}
			cancel()
			d.log.Warn().Msg("call cancelled by shutdown; handing it back to run again (idempotent tool)")
			return settlement{kind: settleNak}
		}
		d.log.Warn().Msg("call cancelled by shutdown; answering tool outcome unknown")
		res = unknownResult(d.call)
	}

	done := h.rec
	done.State = claimDone
	res, err := t.fit(d, res, &done)
	if err != nil {
		d.log.Error().Err(err).Msg("encoding the result failed")
		return nakAfter(publishRetryDelay)
	}
	done.Result = recordResult(res)
	if err := t.record(ctx, d, h, done); err != nil {
		if errors.Is(err, errClaimLost) {
			d.log.Warn().Msg("the claim was taken over before the result was recorded; the result is dropped")
			return nakAfter(d.leaveDelay)
		}
		d.log.Warn().Err(err).Msg("recording the result failed; the call will be redelivered")
		return nakAfter(publishRetryDelay)
	}
	if testHookClaimDone != nil {
		testHookClaimDone(d.call)
	}
	return t.publish(ctx, d, res, false)
}

// run invokes the handler while renewing the claim every heartbeat. If a
// renewal finds the claim taken over, the handler's context is cancelled
// and lost is true: the run must not answer.
func (t *tool) run(ctx context.Context, d *delivery, h *held) (out Result, lost bool) {
	hctx, cancel := context.WithDeadline(ctx, d.call.Deadline)
	defer cancel()
	bctx, stopBeats := context.WithCancel(ctx)
	defer stopBeats()
	var taken atomic.Bool
	var beats sync.WaitGroup
	beats.Go(func() {
		tick := time.NewTicker(d.heartbeat)
		defer tick.Stop()
		for {
			select {
			case <-bctx.Done():
				return
			case <-tick.C:
			}
			octx, done := context.WithTimeout(bctx, opTimeout)
			err := h.beat(octx)
			done()
			switch {
			case errors.Is(err, errClaimLost):
				d.log.Warn().Msg("the claim was taken over by another delivery; cancelling the handler")
				taken.Store(true)
				cancel()
				return
			case err != nil && bctx.Err() == nil:
				d.log.Warn().Err(err).Msg("renewing the claim failed")
			}
		}
	})
	out = invoke(d.log.WithContext(hctx), t.handler, d.call)
	stopBeats()
	beats.Wait()
	return out, taken.Load()
}

// record marks the held claim done with its result, retrying a failed
// write recordTries times; errClaimLost ends it at once.
func (t *tool) record(ctx context.Context, d *delivery, h *held, done claimRecord) error {
	var err error
	for try := range recordTries {
		if try > 0 && !sleep(ctx, retryDelay) {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, opTimeout)
		err = h.write(wctx, done)
		cancel()
		if err == nil || errors.Is(err, errClaimLost) {
			return err
		}
		d.log.Warn().Err(err).Int("try", try+1).Msg("recording the result in the claim failed")
	}
	return err
}

// resultOf is an empty result of call: its identity and its token, which
// every result a tool worker publishes carries (run, answered from the
// claim or synthesized), since the turn worker accepts none without it.
func resultOf(call wire.ToolCall) wire.ToolResult {
	return wire.ToolResult{SessionID: call.SessionID, TurnID: call.TurnID, CallID: call.CallID, Token: call.Token}
}

func unknownResult(call wire.ToolCall) wire.ToolResult {
	res := resultOf(call)
	res.Content, res.IsError, res.Synthesized = OutcomeUnknownContent, true, true
	return res
}

// fit cuts res to what both the published result, in the call's encoding,
// and the claim that records it (done, when given, with res as its result)
// can carry within the server's max payload: the cut wire.FitContent makes,
// with a marker that tells the model how much there was, never a
// replacement. The claim and the published result thus hold the same
// content.
func (t *tool) fit(d *delivery, res wire.ToolResult, done *claimRecord) (wire.ToolResult, error) {
	limit := int(t.js.Conn().MaxPayload()) - headerRoom
	size := func(content string, full int, truncated bool) (int, error) {
		probe := res
		probe.Content, probe.ContentTruncated, probe.ContentBytes = content, truncated, 0
		if truncated {
			probe.ContentBytes = full
		}
		b, err := d.codec.Marshal(&probe)
		if err != nil || done == nil {
			return len(b), err
		}
		rec := *done
		rec.Result = recordResult(probe)
		c, err := encodeClaim(rec)
		return max(len(b), len(c)), err
	}
	n, err := size(res.Content, res.ContentBytes, res.ContentTruncated)
	if err != nil || n <= limit {
		return res, err
	}
	returned := len(res.Content)
	res.Content, res.ContentBytes, res.ContentTruncated, err = wire.FitContent(res.Content, limit, size)
	if err != nil {
		return res, err
	}
	if !res.ContentTruncated {
		res.ContentBytes = 0
	}
	d.log.Warn().Int("result_bytes", returned).Int("stored_bytes", len(res.Content)).Msg("result exceeds the server's max payload; answering with it truncated")
	return res, nil
}

// publish stores res on the session's result subject, deduplicated by the
// call's identity, and settles the call: acked once the result is stored,
// handed back after publishRetryDelay if the publish failed. A result
// published after the call's deadline would contradict the timeout result
// the turn worker wrote: the call is terminated instead.
func (t *tool) publish(ctx context.Context, d *delivery, res wire.ToolResult, fromClaim bool) settlement {
	if d.expired() {
		return term(termExpired)
	}
	ctx = context.WithoutCancel(ctx)
	if fromClaim {
		// Recorded for a delivery in another encoding, it may not fit in
		// this one.
		var err error
		if res, err = t.fit(d, res, nil); err != nil {
			d.log.Error().Err(err).Msg("encoding the result failed")
			return nakAfter(publishRetryDelay)
		}
	}
	out, err := t.encode(d.codec, res)
	if err != nil {
		d.log.Error().Err(err).Msg("encoding the result failed")
		return nakAfter(publishRetryDelay)
	}
	pctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	ack, err := t.js.PublishMsg(pctx, out, jetstream.WithMsgID(resultMsgID(res)))
	if err != nil {
		d.log.Warn().Err(err).Msg("publishing the result failed; the call will be redelivered")
		return nakAfter(publishRetryDelay)
	}
	return settlement{kind: settleAck, answered: &answered{res: res, ack: ack, fromClaim: fromClaim}}
}

// settle carries out s on the delivery's message and says what became of
// the call.
func (t *tool) settle(ctx context.Context, d *delivery, s settlement) CallOutcome {
	switch s.kind {
	case settleAck:
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
		defer cancel()
		if err := d.m.DoubleAck(actx); err != nil {
			// The result is stored and recorded in the claim: a
			// redelivery publishes it again, and the stream discards it.
			d.log.Warn().Err(err).Msg("acking the call failed; its redelivery publishes the recorded result")
			return CallRetry
		}
		a := s.answered
		d.log.Info().Bool("is_error", a.res.IsError).Bool("synthesized", a.res.Synthesized).
			Bool("from_claim", a.fromClaim).Bool("duplicate", a.ack.Duplicate).Uint64("result_seq", a.ack.Sequence).
			Msg("call answered")
		switch {
		case a.fromClaim:
			return CallReplayed
		case a.res.Synthesized:
			return CallUnknown
		case a.res.IsError:
			return CallError
		}
		return CallOK
	case settleNak:
		if err := d.m.Nak(); err != nil {
			d.log.Warn().Err(err).Msg("handing back a call failed; it is redelivered after its ack wait")
		}
	case settleNakDelay:
		if err := d.m.NakWithDelay(s.delay); err != nil {
			d.log.Warn().Err(err).Msg("handing back a call failed; it is redelivered after its ack wait")
		}
	case settleTerm:
		return t.term(d.log, d.m, s.reason, nil)
	}
	return CallRetry
}

func (t *tool) encode(codec wire.Codec, res wire.ToolResult) (*nats.Msg, error) {
	data, err := codec.Marshal(&res)
	if err != nil {
		return nil, err
	}
	out := &nats.Msg{Subject: t.subjects.Result(res.SessionID), Data: data, Header: nats.Header{}}
	out.Header.Set(wire.HeaderContentType, codec.ContentType())
	return out, nil
}

// resultMsgID identifies a call's result for JetStream deduplication:
// "result:" and the unpadded base64url SHA-256 of the call's token. A
// redelivered call has the same token, so its result is discarded as a
// duplicate; only who received the call can know the id, so nobody else
// can suppress its result by publishing first under it; and the id names
// nothing (a stream's last message id can be read back from a refused
// publish's error, by anyone allowed to publish there).
func resultMsgID(r wire.ToolResult) string {
	sum := sha256.Sum256([]byte(r.Token))
	return "result:" + base64.RawURLEncoding.EncodeToString(sum[:])
}

// term settles a call that must never run. err is logged: validation and
// decode errors name fields, never values.
func (t *tool) term(log zerolog.Logger, m message, reason string, err error) CallOutcome {
	ev, outcome := log.Warn(), CallRejected
	if reason == termExpired {
		ev, outcome = log.Info(), CallExpired
	}
	ev.Err(err).Str("reason", reason).Msg("call terminated without a result")
	if err := m.TermWithReason(reason); err != nil {
		log.Warn().Err(err).Msg("terminating the call failed; it is redelivered after its ack wait")
	}
	return outcome
}

package turn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/turnstream/turnstream/internal/calltoken"
	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/continuation"
	"github.com/turnstream/turnstream/internal/history"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/tracing"
	"github.com/turnstream/turnstream/pkg/wire"
)

// ErrCancelled is the cause a worker cancels a turn's context with when a
// client asked for it on the cancel subject.
var ErrCancelled = errors.New("turn: cancelled by request")

var errWallClock = errors.New("turn: wall-clock budget exceeded")

// Reasons a turn fails, carried in turn.failed payloads (wire.FailReason).
const (
	ReasonProvider         = string(wire.FailProvider)
	ReasonCancelled        = string(wire.FailCancelled)
	ReasonBudget           = string(wire.FailBudget)
	ReasonTruncatedCalls   = string(wire.FailTruncatedCalls)
	ReasonNoAnswer         = string(wire.FailNoAnswer)
	ReasonUnusableResponse = string(wire.FailUnusableResponse)
)

// RuntimeProvider names the author of messages the runtime writes itself
// (budget notices, refusals, guidance); they are marked synthesized.
const RuntimeProvider = "turnstream"

// Loop runs turns. Its fields are set once; Run may be called concurrently.
type Loop struct {
	Exec   Executor
	Routes Routes
	// Budgets are the worker's defaults and ceilings.
	Budgets config.Budgets
	// State keeps worker-only provider state per step when a delivery
	// brings no store of its own (Input.State); nil keeps none.
	State StateStore
	// History tunes prompt assembly.
	History HistoryOptions
	// ToolTimeout is each tool call's deadline. Default
	// config.DefaultToolTimeout (60s).
	ToolTimeout time.Duration
	// CallKey is the fleet key (bus.State.CallTokenKey): each dispatched
	// call carries a token signed with it, and a result is accepted only
	// with its call's token. Required for turns that run tools: without
	// it no call is dispatched.
	CallKey calltoken.Key
	// Schemas compiles the tool schemas of a delivery that comes without
	// them (Input.Schemas); nil compiles them uncached (CompileTools). A
	// worker creates one SchemaCache and uses it for both.
	Schemas *SchemaCache
	// Results say how tool results are stored: redacted, at most
	// MaxBytes, within one record.
	Results ResultOptions
	// Now defaults to time.Now.
	Now func() time.Time
	Log zerolog.Logger
	// Probe, when set, is called at each probe point a delivery passes
	// (ProbePoints): crash tests stop the process there. nil in production.
	Probe func(point string)
	// Tracer traces each delivery, step and tool call (internal/tracing
	// names the spans; the provider attempts are the executor's). nil
	// traces nothing.
	Tracer trace.Tracer
}

func (l *Loop) tracer() trace.Tracer {
	if l.Tracer == nil {
		return tracing.Tracer(nil)
	}
	return l.Tracer
}

// HistoryOptions tune prompt assembly.
type HistoryOptions struct {
	// SummaryRoute names the route that summarizes history left out to fit
	// the context window; empty uses a deterministic notice instead.
	SummaryRoute string
	// EchoCap bounds stored replay echo per tool-call turn. Default
	// history.DefaultEchoCap (64 KiB).
	EchoCap int
	// Reserve is the fraction of the context window kept for the answer,
	// less than 1. Default history.DefaultReserve (0.25).
	Reserve float64
}

func (l *Loop) echoCap() int {
	if l.History.EchoCap > 0 {
		return l.History.EchoCap
	}
	return history.DefaultEchoCap
}

func (l *Loop) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// Input is one delivery of a turn.
type Input struct {
	Request *wire.TurnRequest
	// Log is the session log as loaded, with each message's store time.
	Log    []wire.Message
	Stored []time.Time
	// Seq is the request's submit-stream sequence, kept in the turn's
	// record.
	Seq uint64
	// Delivery counts the deliveries of the request that ran, from 1 (the
	// lease's durable count).
	Delivery int
	Writer   Writer
	// State is the worker-only state as this delivery may write it (fenced
	// by its lease); nil uses Loop.State.
	State       StateStore
	OpenResults ResultsOpener
	LastResult  LastResult
	// Schemas are the request's compiled tool schemas (SchemaCache.Compile
	// or CompileTools); nil compiles them with Loop.Schemas.
	Schemas ToolSchemas
	// Tail is the turn's last stored chunk, so a resumed step numbers its
	// attempts after the earlier delivery's and ends an attempt that
	// delivery left without a marker.
	Tail Tail
}

// Tail locates a turn's last stored chunk: zero when it has none.
type Tail struct {
	Step, Attempt, Seq int
	// Marker is the chunk's marker ("" for a delta: its attempt never
	// ended).
	Marker string
}

// Outcome is how a delivery ended. Err means the loop could not write what
// it had to (NATS unavailable, fenced): no terminal event was written and
// the request should be redelivered to resume.
type Outcome struct {
	// Status is wire.EventTurnCompleted or wire.EventTurnFailed.
	Status string
	Reason string
	Err    error
}

// run is the state of one delivery of a turn.
type run struct {
	loop    *Loop
	req     *wire.TurnRequest
	seq     uint64
	w       Writer
	state   StateStore
	open    ResultsOpener
	last    LastResult
	log     zerolog.Logger
	msgs    []wire.Message
	stored  []time.Time // store time of each message in msgs
	taken   map[string]bool
	budgets Budgets
	tools   map[string]wire.Tool
	schemas ToolSchemas
	// faithful holds, for this delivery only, the real arguments of calls
	// stored redacted: tools run with them; they are never stored.
	faithful map[string]string
	// envelope is the session's continuation envelope as loaded; hashes
	// describe this turn's system prompt and tools.
	envelope            *continuation.Envelope
	systemHash, toolset string
	// cursorLost forbids cursors after a provider lost one.
	cursorLost bool
	// served is the last provider result this delivery finalized.
	served  *provider.Result
	started time.Time
	// tail: the chunk log's tail when the run began.
	tail Tail
}

// Run drives a turn from wherever its session log says it is to its one
// terminal event.
func (l *Loop) Run(ctx context.Context, in Input) (out Outcome) {
	req := in.Request
	ctx, span := l.tracer().Start(ctx, tracing.SpanTurn, trace.WithAttributes(tracing.Turn(req.SessionID, req.TurnID, in.Delivery)...))
	defer func() {
		if p := recover(); p != nil {
			tracing.End(span, true, "panic", tracing.KeyOutcome.String("panic"))
			panic(p) // the lifecycle's to recover
		}
		endSpan(span, out)
	}()
	r := l.newRun(in)
	r.envelope = r.loadEnvelope(ctx)
	r.schemas = in.Schemas
	if r.schemas == nil {
		var err error
		if l.Schemas != nil {
			r.schemas, err = l.Schemas.Compile(req.Tools)
		} else {
			r.schemas, err = CompileTools(req.Tools)
		}
		if err != nil {
			return Outcome{Err: err}
		}
	}
	st := history.StateOf(in.Log, req.TurnID)
	resumed := st.Start < len(in.Log)
	r.endTail(st)
	span.SetAttributes(tracing.KeyResumed.Bool(resumed))
	r.emit(0, 0, wire.TurnAccepted{
		Resumed: resumed, Delivery: in.Delivery, InputMessages: len(req.Input), Tools: len(req.Tools),
		MaxIterations: r.budgets.MaxIterations, MaxToolCalls: r.budgets.MaxToolCalls,
		WallClockMS: ms(r.budgets.WallClock),
	})
	ctx, cancel := context.WithDeadlineCause(ctx, r.started.Add(r.budgets.WallClock), errWallClock)
	defer cancel()
	out = r.drive(ctx, st.Inputs)
	if out.Err != nil {
		// Nothing of the delivery stays in flight once it is handed back
		// (the delivery already failed: what else failed is only logged).
		if err := r.sync(ctx); err != nil {
			r.log.Warn().Err(err).Msg("writes in flight after a failed delivery")
		}
	}
	return out
}

// Abort ends a turn that cannot run to its end (its deliveries exhausted, a
// panic, a record too large for the server) with turn.failed and reason.
// Calls the session log left without a result get an explicit one first,
// so the next turn finds a valid conversation.
func (l *Loop) Abort(ctx context.Context, in Input, reason string) (out Outcome) {
	r := l.newRun(in)
	st := history.StateOf(r.msgs, r.req.TurnID)
	ctx, span := l.tracer().Start(ctx, tracing.SpanAbort, trace.WithAttributes(tracing.Turn(r.req.SessionID, r.req.TurnID, in.Delivery)...),
		trace.WithAttributes(tracing.KeyReason.String(reason)))
	defer func() { endSpan(span, out) }()
	if pending := st.Pending(); len(pending) > 0 {
		why := "not completed: the turn failed (" + reason + ")"
		if reason == ReasonCancelled {
			why = cancelledCall
		}
		if err := r.closeCalls(ctx, st, pending, why); err != nil {
			r.log.Warn().Err(err).Msg("calls left open by an aborted turn not closed")
		}
	}
	return r.fail(ctx, st.Steps, wire.TurnFailed{Reason: wire.FailReason(reason)})
}

// endSpan ends a delivery's or a step's span with its outcome: failed
// with the turn's reason, or handed back (the delivery's error, named by
// its type only).
func endSpan(span trace.Span, out Outcome) {
	switch {
	case out.Err != nil:
		tracing.End(span, true, "handed_back", tracing.KeyOutcome.String("handed_back"))
	case out.Status == wire.EventTurnFailed:
		tracing.End(span, true, out.Reason, tracing.KeyOutcome.String("failed"), tracing.KeyReason.String(out.Reason))
	case out.Status != "":
		tracing.End(span, false, "", tracing.KeyOutcome.String("completed"))
	default:
		tracing.End(span, false, "")
	}
}

// newRun prepares the state of one delivery.
func (l *Loop) newRun(in Input) *run {
	req := in.Request
	r := &run{
		loop: l, req: req, seq: in.Seq, w: in.Writer, state: in.State, open: in.OpenResults, last: in.LastResult,
		log:      l.Log.With().Str("session_id", req.SessionID).Str("turn_id", req.TurnID).Logger(),
		msgs:     append([]wire.Message(nil), in.Log...),
		stored:   append([]time.Time(nil), in.Stored...),
		taken:    map[string]bool{},
		faithful: map[string]string{},
		budgets:  Resolve(l.Budgets, req.Budgets),
		tools:    make(map[string]wire.Tool, len(req.Tools)),
		started:  l.now(),
		tail:     in.Tail,
	}
	if r.state == nil {
		r.state = l.State
	}
	for _, t := range req.Tools {
		r.tools[t.Name] = t
	}
	r.systemHash, r.toolset = continuation.SystemPromptHash(req.System), continuation.ToolsetHash(req.Tools)
	for _, m := range in.Log {
		for _, c := range m.ToolCalls {
			r.taken[c.ID] = true
		}
	}
	if st := history.StateOf(in.Log, req.TurnID); st.Start < len(in.Log) && st.Start < len(in.Stored) {
		r.started = in.Stored[st.Start] // resumed: the budgets count from the turn's start
	}
	return r
}

func (r *run) drive(ctx context.Context, inputs int) Outcome {
	for i := inputs; i < len(r.req.Input); i++ {
		in := r.req.Input[i]
		if err := r.appendAsync(ctx, &wire.Message{Role: in.Role, Content: in.Content}); err != nil {
			return r.interrupted(ctx, err)
		}
	}
	for {
		st := history.StateOf(r.msgs, r.req.TurnID)
		switch a := next(st, r.budgets); a.kind {
		case actFinish:
			return r.finish(ctx, st)
		case actCloseCalls:
			if err := r.closeCalls(ctx, st, a.calls, "not executed: the turn's tool-call budget is spent"); err != nil {
				return r.interrupted(ctx, err)
			}
			return r.exceeded(ctx, a.budget)
		case actRunTools:
			if err := r.runTools(ctx, st, a.calls); err != nil {
				return r.interrupted(ctx, err)
			}
		case actExceeded:
			return r.exceeded(ctx, a.budget)
		case actStep:
			if out, done := r.step(ctx, st); done {
				return out
			}
		}
	}
}

// append persists a message of this turn to the session log.
func (r *run) append(ctx context.Context, m *wire.Message) error {
	m.SessionID, m.TurnID, m.Time = r.req.SessionID, r.req.TurnID, r.loop.now()
	// A cancellation must not cut an append short: the record may be stored
	// while its ack is in flight, and the loop would then act on a log it
	// does not know. Writes end on their own, bounded.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	if err := r.w.Append(wctx, m); err != nil {
		return err
	}
	r.msgs = append(r.msgs, *m)
	r.stored = append(r.stored, m.Time)
	return nil
}

// appendAsync persists a message of this turn without waiting for the
// ack when the writer pipelines appends: the step's checkpoint waits for
// it, before the provider is called.
func (r *run) appendAsync(ctx context.Context, m *wire.Message) error {
	pw, ok := r.w.(pipelinedWriter)
	if !ok {
		return r.append(ctx, m)
	}
	m.SessionID, m.TurnID, m.Time = r.req.SessionID, r.req.TurnID, r.loop.now()
	if err := pw.AppendAsync(ctx, m); err != nil {
		return err
	}
	r.msgs = append(r.msgs, *m)
	r.stored = append(r.stored, m.Time)
	return nil
}

// finish ends the turn with turn.completed.
func (r *run) finish(ctx context.Context, st history.TurnState) Outcome {
	r.saveEnvelope(ctx)
	// Usage of every delivery of the turn: what its messages carry.
	var usage wire.Usage
	for _, m := range r.msgs[st.Start:] {
		if m.Usage != nil {
			usage.Add(*m.Usage)
		}
	}
	p := wire.TurnCompleted{
		Steps: st.Steps, ToolCalls: st.ToolCalls,
		InputTokens: usage.InputTokens, CachedInputTokens: usage.CachedInputTokens,
		OutputTokens: usage.OutputTokens, DurationMS: ms(r.loop.now().Sub(r.started)),
	}
	if st.Last != nil {
		p.FinishReason = wire.FinishReason(st.Last.FinishReason)
	}
	return r.terminal(ctx, "", p)
}

// terminal ends the turn with p, its terminal event's payload (reason is
// the Outcome's).
func (r *run) terminal(ctx context.Context, reason string, p wire.EventPayload) Outcome {
	// The terminal event is written even when the turn's own context ended
	// (cancellation, wall clock): it is how the turn ends.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	ev := r.event(0, 0, p)
	r.loop.probe(ProbeBeforeEnding)
	// The end is recorded first: whatever happens after, the turn is over.
	// It goes out with what is still in flight (the last attempt's marker,
	// the step's events, the continuation envelope), all awaited at once;
	// then the terminal event, stored after everything else.
	rec := Record{V: 1, Seq: r.seq, End: &EndRecord{V: history.ReplayVersion, Type: ev.Type, Payload: ev.Payload}}
	if err := r.putAsync(wctx, RecordKey(r.req.SessionID, r.req.TurnID), rec); err != nil {
		return Outcome{Err: err}
	}
	if err := r.sync(wctx); err != nil {
		return Outcome{Err: err}
	}
	if err := r.w.Terminal(wctx, ev); err != nil {
		return Outcome{Err: fmt.Errorf("turn: terminal event: %w", err)}
	}
	return Outcome{Status: ev.Type, Reason: reason}
}

// fail ends the turn with turn.failed: p, with its step and duration set.
func (r *run) fail(ctx context.Context, step int, p wire.TurnFailed) Outcome {
	p.Step = step
	p.DurationMS = ms(r.loop.now().Sub(r.started))
	return r.terminal(ctx, string(p.Reason), p)
}

// exceeded ends the turn on a budget: a budget.exceeded event with the
// counts, a deterministic visible message, and turn.failed.
func (r *run) exceeded(ctx context.Context, budget string) Outcome {
	st := history.StateOf(r.msgs, r.req.TurnID)
	r.emit(st.Steps, 0, wire.BudgetExceeded{
		Budget: wire.Budget(budget), Steps: st.Steps, ToolCalls: st.ToolCalls, RepeatedToolFailures: st.RepeatedFailures(),
		DurationMS:    ms(r.loop.now().Sub(r.started)),
		MaxIterations: r.budgets.MaxIterations, MaxToolCalls: r.budgets.MaxToolCalls,
		MaxRepeatedToolFailures: r.budgets.MaxRepeatedToolFailures, WallClockMS: ms(r.budgets.WallClock),
	})
	// The notice is written even when the wall clock ended the turn's context.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	return r.say(wctx, st.Steps, budgetMessage(budget, r.budgets), &wire.TurnFailed{Reason: wire.FailBudget, Budget: wire.Budget(budget)})
}

// cancelledCall is the result a cancelled turn gives each call it left
// open.
const cancelledCall = "cancelled: the turn was cancelled before this tool call returned"

// interrupted handles an error that stopped the loop: a cancellation or a
// spent wall clock ends the turn; anything else leaves it to be resumed.
func (r *run) interrupted(ctx context.Context, err error) Outcome {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, ErrCancelled):
		// Leave the session log valid for the next turn: every call the
		// model made gets an explicit result.
		st := history.StateOf(r.msgs, r.req.TurnID)
		if pending := st.Pending(); len(pending) > 0 {
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
			defer cancel()
			if err := r.closeCalls(wctx, st, pending, cancelledCall); err != nil {
				return Outcome{Err: err}
			}
		}
		return r.fail(ctx, st.Steps, wire.TurnFailed{Reason: wire.FailCancelled})
	case errors.Is(cause, errWallClock):
		st := history.StateOf(r.msgs, r.req.TurnID)
		if pending := st.Pending(); len(pending) > 0 {
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
			defer cancel()
			if err := r.closeCalls(wctx, st, pending, "not completed: the turn's time limit was reached"); err != nil {
				return Outcome{Err: err}
			}
		}
		return r.exceeded(ctx, BudgetWallClock)
	}
	return Outcome{Err: err}
}

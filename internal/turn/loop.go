package turn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/history"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/pkg/wire"
)

// ErrCancelled is the cause a worker cancels a turn's context with when a
// client asked for it on the cancel subject.
var ErrCancelled = errors.New("turn: cancelled by request")

var errWallClock = errors.New("turn: wall-clock budget exceeded")

// Reasons a turn fails, carried in turn.failed payloads.
const (
	ReasonProvider         = "provider_failed"
	ReasonCancelled        = "cancelled"
	ReasonBudget           = "budget_exceeded"
	ReasonIncompleteCalls  = "incomplete_tool_calls"
	ReasonUnusableResponse = "unusable_response"
)

// Loop runs turns. Its fields are set once; Run may be called concurrently.
type Loop struct {
	Exec   Executor
	Routes Routes
	// Budgets are the worker's defaults and ceilings.
	Budgets config.Budgets
	// ToolTimeout is each tool call's deadline. Default 60s.
	ToolTimeout time.Duration
	// Now defaults to time.Now.
	Now func() time.Time
	Log zerolog.Logger
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
	// Delivery is the request's delivery count, from 1.
	Delivery    int
	Writer      Writer
	OpenResults ResultsOpener
	// LastStep and LastAttempt locate the turn's last published chunk, so
	// a resumed step numbers its attempts after the earlier delivery's.
	LastStep, LastAttempt int
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
	w       Writer
	open    ResultsOpener
	log     zerolog.Logger
	msgs    []wire.Message
	stored  []time.Time // store time of each message in msgs
	taken   map[string]bool
	budgets Budgets
	tools   map[string]wire.Tool
	usage   wire.Usage
	started time.Time
	// lastStep and lastAttempt: the chunk log's tail when the run began.
	lastStep, lastAttempt int
}

// Run drives a turn from wherever its session log says it is to its one
// terminal event.
func (l *Loop) Run(ctx context.Context, in Input) Outcome {
	req := in.Request
	r := &run{
		loop: l, req: req, w: in.Writer, open: in.OpenResults,
		log:      l.Log.With().Str("session_id", req.SessionID).Str("turn_id", req.TurnID).Logger(),
		msgs:     append([]wire.Message(nil), in.Log...),
		stored:   append([]time.Time(nil), in.Stored...),
		taken:    map[string]bool{},
		budgets:  Resolve(l.Budgets, req.Budgets),
		tools:    make(map[string]wire.Tool, len(req.Tools)),
		started:  l.now(),
		lastStep: in.LastStep, lastAttempt: in.LastAttempt,
	}
	for _, t := range req.Tools {
		r.tools[t.Name] = t
	}
	for _, m := range in.Log {
		for _, c := range m.ToolCalls {
			r.taken[c.ID] = true
		}
	}
	st := history.StateOf(in.Log, req.TurnID)
	resumed := st.Start < len(in.Log)
	if resumed && st.Start < len(in.Stored) {
		r.started = in.Stored[st.Start]
	}
	r.emit(wire.EventTurnAccepted, 0, 0, Payload{
		"resumed": resumed, "delivery": in.Delivery, "input_messages": len(req.Input), "tools": len(req.Tools),
		"max_iterations": r.budgets.MaxIterations, "max_tool_calls": r.budgets.MaxToolCalls,
		"wall_clock_ms": ms(r.budgets.WallClock),
	})
	ctx, cancel := context.WithDeadlineCause(ctx, r.started.Add(r.budgets.WallClock), errWallClock)
	defer cancel()
	out := r.drive(ctx, st.Inputs)
	if out.Err != nil {
		if err := r.w.Flush(context.WithoutCancel(ctx)); err != nil {
			r.log.Warn().Err(err).Msg("flush after failed delivery")
		}
		return out
	}
	return out
}

func (r *run) drive(ctx context.Context, inputs int) Outcome {
	for i := inputs; i < len(r.req.Input); i++ {
		in := r.req.Input[i]
		if err := r.append(ctx, &wire.Message{Role: in.Role, Content: in.Content}); err != nil {
			return r.interrupted(ctx, err)
		}
	}
	for {
		st := history.StateOf(r.msgs, r.req.TurnID)
		if st.Done() {
			return r.finish(ctx, wire.EventTurnCompleted, "", st)
		}
		if pending := st.Pending(); len(pending) > 0 {
			if st.ToolCalls > r.budgets.MaxToolCalls {
				if err := r.closeCalls(ctx, st, pending, "not executed: the turn's tool-call budget is spent"); err != nil {
					return r.interrupted(ctx, err)
				}
				return r.exceeded(ctx, "max_tool_calls", st)
			}
			if err := r.runTools(ctx, st, pending); err != nil {
				return r.interrupted(ctx, err)
			}
			continue
		}
		if st.Steps >= r.budgets.MaxIterations {
			return r.exceeded(ctx, "max_iterations", st)
		}
		if out, done := r.step(ctx, st.Steps+1); done {
			return out
		}
	}
}

// step runs one provider call and persists its finalized message. It
// returns done when the turn ended.
func (r *run) step(ctx context.Context, step int) (Outcome, bool) {
	chain, err := r.loop.Routes.Chain(r.req.Route)
	if err != nil {
		return r.fail(ctx, ReasonProvider, step, Payload{"class": string(provider.ClassNoRoute)}), true
	}
	req := &provider.Request{System: r.req.System, Messages: history.Messages(r.msgs), Tools: r.req.Tools}
	obs := &stepObserver{r: r, step: step}
	if step == r.lastStep {
		obs.base = r.lastAttempt // a resumed step: attempts continue the numbering
	}
	res, err := r.loop.Exec.Execute(ctx, chain, req, obs)
	if ferr := r.w.Flush(ctx); ferr != nil && ctx.Err() == nil {
		return r.interrupted(ctx, ferr), true
	}
	if err != nil {
		if ctx.Err() != nil {
			return r.interrupted(ctx, ctx.Err()), true
		}
		if errors.Is(err, provider.ErrRelay) {
			return r.interrupted(ctx, err), true
		}
		f := provider.AsFailure(err)
		p := Payload{"class": string(f.Class), "attempts": len(res.Attempts)}
		if f.Status != 0 {
			p["http_status"] = f.Status
		}
		return r.fail(ctx, ReasonProvider, step, p), true
	}
	resp := res.Response
	if resp.Usage != nil {
		r.usage.Add(*resp.Usage)
	}
	msg := &wire.Message{
		Step: step, Role: wire.RoleAssistant, Content: resp.Text,
		FinishReason: resp.FinishReason, RawFinishReason: resp.RawFinishReason,
		Provider: res.Target.Provider, Model: res.Target.Model, Usage: resp.Usage,
	}
	// Tools run only from a finished tool turn: never from a length,
	// filter or incomplete stop, and never from an unfinished stream.
	executable := resp.Executable() && resp.FinishReason == wire.FinishToolCalls
	if executable {
		for _, c := range resp.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, wire.Call{
				ID:        NormalizeCallID(c.ProviderID, r.req.SessionID, r.req.TurnID, step, c.Index, r.taken),
				Name:      c.Name,
				Arguments: c.Arguments,
			})
		}
	}
	if err := r.append(ctx, msg); err != nil {
		return r.interrupted(ctx, err), true
	}
	switch {
	case len(resp.ToolCalls) > 0 && !executable:
		return r.fail(ctx, ReasonIncompleteCalls, step, Payload{"tool_calls": len(resp.ToolCalls), "finish_reason": resp.FinishReason}), true
	case len(msg.ToolCalls) > 0:
		return Outcome{}, false
	case resp.FinishReason == wire.FinishStop || resp.FinishReason == wire.FinishLength || resp.FinishReason == wire.FinishContentFilter:
		return Outcome{}, false // the loop sees a finished message and completes
	}
	return r.fail(ctx, ReasonUnusableResponse, step, Payload{"finish_reason": resp.FinishReason}), true
}

// append persists a message of this turn to the session log.
func (r *run) append(ctx context.Context, m *wire.Message) error {
	m.SessionID, m.TurnID, m.Time = r.req.SessionID, r.req.TurnID, r.loop.now()
	if err := r.w.Append(ctx, m); err != nil {
		return err
	}
	r.msgs = append(r.msgs, *m)
	r.stored = append(r.stored, m.Time)
	return nil
}

// finish writes the terminal event.
func (r *run) finish(ctx context.Context, status, reason string, st history.TurnState) Outcome {
	p := Payload{
		"steps": st.Steps, "tool_calls": st.ToolCalls,
		"input_tokens": r.usage.InputTokens, "cached_input_tokens": r.usage.CachedInputTokens,
		"output_tokens": r.usage.OutputTokens, "duration_ms": ms(r.loop.now().Sub(r.started)),
	}
	if st.Last != nil && st.Last.FinishReason != "" {
		p["finish_reason"] = st.Last.FinishReason
	}
	if reason != "" {
		p["reason"] = reason
	}
	return r.terminal(ctx, status, reason, p)
}

func (r *run) terminal(ctx context.Context, status, reason string, p Payload) Outcome {
	// The terminal event is written even when the turn's own context ended
	// (cancellation, wall clock): it is how the turn ends.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := r.w.Terminal(wctx, r.event(status, 0, 0, p)); err != nil {
		return Outcome{Err: fmt.Errorf("turn: terminal event: %w", err)}
	}
	return Outcome{Status: status, Reason: reason}
}

// fail ends the turn with turn.failed.
func (r *run) fail(ctx context.Context, reason string, step int, p Payload) Outcome {
	if p == nil {
		p = Payload{}
	}
	p["reason"] = reason
	p["step"] = step
	p["duration_ms"] = ms(r.loop.now().Sub(r.started))
	return r.terminal(ctx, wire.EventTurnFailed, reason, p)
}

// exceeded ends the turn on a budget.
func (r *run) exceeded(ctx context.Context, budget string, st history.TurnState) Outcome {
	r.emit(wire.EventBudgetExceeded, st.Steps, 0, Payload{
		"budget": budget, "steps": st.Steps, "tool_calls": st.ToolCalls,
		"max_iterations": r.budgets.MaxIterations, "max_tool_calls": r.budgets.MaxToolCalls,
	})
	return r.fail(ctx, ReasonBudget, st.Steps, Payload{"budget": budget})
}

// interrupted handles an error that stopped the loop: a cancellation or a
// spent wall clock ends the turn; anything else leaves it to be resumed.
func (r *run) interrupted(ctx context.Context, err error) Outcome {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, ErrCancelled):
		// Leave the session log valid for the next turn: every call the
		// model made gets an explicit result.
		st := history.StateOf(r.msgs, r.req.TurnID)
		if pending := st.Pending(); len(pending) > 0 {
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if err := r.closeCalls(wctx, st, pending, "cancelled: the turn was cancelled before this tool call returned"); err != nil {
				return Outcome{Err: err}
			}
		}
		return r.fail(ctx, ReasonCancelled, st.Steps, nil)
	case errors.Is(cause, errWallClock):
		st := history.StateOf(r.msgs, r.req.TurnID)
		return r.exceeded(ctx, "wall_clock", st)
	}
	return Outcome{Err: err}
}

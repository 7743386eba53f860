package turn

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/trace"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/continuation"
	"github.com/turnstream/turnstream/internal/history"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/tracing"
	"github.com/turnstream/turnstream/pkg/wire"
)

// decision is what the loop does with a finalized response (the
// Finalization contract).
type decision uint8

const (
	// finished: persist the answer; the turn completes.
	finished decision = iota + 1
	// planTools: persist the message with its calls; plan and run them.
	planTools
	// continueAnswer: persist the text cut at length; the next step asks
	// the same route chain to continue it.
	continueAnswer
	// filtered: a content filter stopped it; persist what text there is,
	// run nothing, never continue.
	filtered
	// truncatedCalls: tool calls cut at length are never executed; retry
	// the step once, then refuse.
	truncatedCalls
	// noAnswer: no visible text and no call (reasoning only, or nothing);
	// retry once with a prefill, then give guidance.
	noAnswer
	// unusable: unknown or incomplete is never success.
	unusable
)

// decide applies the finish-reason table to a finalized response.
func decide(r *assemble.Response) decision {
	calls := len(r.ToolCalls) > 0
	switch r.FinishReason {
	case wire.FinishToolCalls:
		if calls {
			return planTools
		}
		return unusable
	case wire.FinishContentFilter:
		return filtered
	case wire.FinishLength:
		switch {
		case calls:
			return truncatedCalls
		case r.Text == "":
			return noAnswer
		}
		return continueAnswer
	case wire.FinishStop:
		if r.Text == "" && !calls {
			return noAnswer
		}
		return finished
	}
	return unusable
}

// step runs one provider step: the call, at most one in-step retry the
// finish table asks for, and the persisted outcome. It returns done when
// the turn ended.
func (r *run) step(ctx context.Context, st history.TurnState) (out Outcome, done bool) {
	step := st.Steps + 1
	ctx, span := r.loop.tracer().Start(ctx, tracing.SpanStep, trace.WithAttributes(tracing.KeyStep.Int(step)))
	defer func() { endSpan(span, out) }()
	chain, err := r.loop.Routes.Chain(r.req.Route)
	if err != nil {
		return r.fail(ctx, step, wire.TurnFailed{Reason: wire.FailProvider, Class: wire.ClassNoRoute}), true
	}
	obs := &stepObserver{r: r, step: step}
	if step == r.tail.Step {
		obs.base = r.tail.Attempt // a resumed step: attempts continue the numbering
	}
	var instruction string
	if st.Continuing() {
		instruction = continueInstruction
		r.emit(step, 0, wire.TurnContinued{Reason: wire.ContinueLength})
	}
	retried := false
	for {
		res, out, done := r.call(ctx, step, chain, obs, instruction)
		if done {
			return out, true
		}
		resp := res.Response
		switch d := decide(resp); d {
		case planTools:
			return r.persist(ctx, step, obs, res, resp.Text, r.normalize(step, resp.ToolCalls))
		case finished, continueAnswer:
			return r.persist(ctx, step, obs, res, resp.Text, nil)
		case filtered:
			if resp.Text == "" {
				if err := r.record(ctx, step, res, nil); err != nil {
					return r.interrupted(ctx, err), true
				}
				obs.settle(wire.MarkerCompleted)
				return r.say(ctx, step, filteredNotice, nil), true
			}
			return r.persist(ctx, step, obs, res, resp.Text, nil)
		case truncatedCalls, noAnswer:
			reason := map[decision]wire.StepRetryReason{truncatedCalls: wire.StepRetryTruncatedCalls, noAnswer: wire.StepRetryNoAnswer}[d]
			if !retried {
				retried = true
				obs.settle(wire.MarkerRetrying)
				r.emit(step, 0, wire.StepRetried{Reason: reason, FinishReason: wire.FinishReason(resp.FinishReason), ToolCalls: len(resp.ToolCalls)})
				if d == noAnswer {
					instruction = answerInstruction
				}
				continue
			}
			obs.settle(wire.MarkerFailed)
			if d == truncatedCalls {
				return r.say(ctx, step, truncatedRefusal, &wire.TurnFailed{Reason: wire.FailTruncatedCalls, ToolCalls: len(resp.ToolCalls)}), true
			}
			return r.say(ctx, step, noAnswerGuidance, &wire.TurnFailed{Reason: wire.FailNoAnswer}), true
		default:
			obs.settle(wire.MarkerFailed)
			return r.fail(ctx, step, wire.TurnFailed{Reason: wire.FailUnusableResponse, FinishReason: wire.FinishReason(resp.FinishReason)}), true
		}
	}
}

// call makes the step's provider request: the session log, then the
// request-only instruction, if any, last. It returns done with the turn's
// outcome when the call ended the turn.
func (r *run) call(ctx context.Context, step int, chain []provider.Target, obs *stepObserver, instruction string) (*provider.Result, Outcome, bool) {
	req, proj, err := r.prompt(ctx, instruction)
	if err != nil {
		return nil, r.interrupted(ctx, err), true
	}
	if err := r.checkpoint(ctx, step, obs.base); err != nil {
		return nil, r.interrupted(ctx, err), true // request facts not durable: the provider is not called
	}
	res, err := r.loop.Exec.Execute(ctx, chain, req, obs)
	obs.base += len(res.Attempts)
	if res.Response != nil {
		r.diagnose(step, proj, res.Target)
	}
	// The attempt's chunks are awaited at the step's next write (persist,
	// a retry's checkpoint, the terminal event): every path syncs before
	// it stores anything that rests on them.
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, provider.ErrRelay) {
			return nil, r.interrupted(ctx, err), true
		}
		f := provider.AsFailure(err)
		if f.Class == provider.ClassCursorLost && !r.cursorLost {
			return r.cursorLoss(ctx, step, chain, obs, instruction, res)
		}
		p := wire.TurnFailed{Reason: wire.FailProvider, Class: wire.FailureClass(f.Class), Attempts: len(res.Attempts), HTTPStatus: f.Status}
		if f.Class == provider.ClassResponseTooLarge {
			p.Limit = wire.ResponseLimit(f.Reason) // a fixed limit name, never content
		}
		return nil, r.fail(ctx, step, p), true
	}
	return res, Outcome{}, false
}

// normalize gives each finalized call its normalized id, once, and redacts
// credential material from the arguments it will store.
func (r *run) normalize(step int, calls []assemble.ToolCall) []wire.Call {
	out := make([]wire.Call, 0, len(calls))
	for _, c := range calls {
		call := wire.Call{
			ID:        NormalizeCallID(c.ProviderID, r.req.SessionID, r.req.TurnID, step, c.Index, r.taken),
			Name:      c.Name,
			Arguments: c.Arguments,
		}
		// Credentials in arguments are never stored: the log keeps them
		// redacted, the tool gets the faithful text from this delivery.
		if stored, redacted := redactArgs(c.Arguments); redacted {
			r.faithful[call.ID] = c.Arguments
			call.Arguments, call.ArgumentsRedacted = stored, true
		}
		out = append(out, call)
	}
	return out
}

// persist records the step's provider facts, then appends its assistant
// message: the message with its tool calls is on the session log before any
// call is published.
func (r *run) persist(ctx context.Context, step int, obs *stepObserver, res *provider.Result, text string, calls []wire.Call) (Outcome, bool) {
	resp := res.Response
	if err := r.record(ctx, step, res, calls); err != nil {
		return r.interrupted(ctx, err), true
	}
	if err := r.sync(ctx); err != nil {
		return r.interrupted(ctx, err), true // its chunks or its state lost: the step runs again
	}
	msg := &wire.Message{
		Step: step, Role: wire.RoleAssistant, Content: text, ToolCalls: calls,
		FinishReason: resp.FinishReason, RawFinishReason: resp.RawFinishReason,
		Provider: res.Target.Provider, Model: res.Target.Model, Usage: resp.Usage,
	}
	if err := r.append(ctx, msg); err != nil {
		return r.interrupted(ctx, err), true
	}
	obs.settle(wire.MarkerCompleted) // the attempt counts: its message is on the log
	r.loop.probe(ProbeAssistant)
	return Outcome{}, false
}

// say appends a message the runtime writes itself (marked synthesized),
// then ends the turn: with failed, or completed when failed is nil.
func (r *run) say(ctx context.Context, step int, text string, failed *wire.TurnFailed) Outcome {
	msg := &wire.Message{Step: step, Role: wire.RoleAssistant, Content: text, Synthesized: true,
		FinishReason: wire.FinishStop, Provider: RuntimeProvider}
	if err := r.append(ctx, msg); err != nil {
		return r.interrupted(ctx, err)
	}
	if failed == nil {
		return r.finish(ctx, history.StateOf(r.msgs, r.req.TurnID))
	}
	return r.fail(ctx, step, *failed)
}

// cursorLoss handles a provider that no longer has the response the request
// continued: without tool results waiting on it the step replays the full
// history at once; with them the turn fails and is not retried (their calls
// belong to a response the provider lost).
func (r *run) cursorLoss(ctx context.Context, step int, chain []provider.Target, obs *stepObserver, instruction string, res *provider.Result) (*provider.Result, Outcome, bool) {
	st := history.StateOf(r.msgs, r.req.TurnID)
	pending := st.Last != nil && len(st.Last.ToolCalls) > 0 && len(st.Pending()) == 0
	loss := continuation.OnCursorLoss(pending)
	p := wire.ContinuationDegraded{Reason: wire.DegradedReason(loss.Reason)}
	if len(res.Attempts) > 0 {
		last := res.Attempts[len(res.Attempts)-1].Target
		p.Provider, p.Model = token(last.Provider), token(last.Model)
	}
	r.emit(step, 0, p)
	if loss.Fail {
		return nil, r.fail(ctx, step, wire.TurnFailed{Reason: wire.FailReason(loss.FailReason), Class: wire.ClassCursorLost}), true
	}
	r.cursorLost = true // replay from now on
	return r.call(ctx, step, chain, obs, instruction)
}

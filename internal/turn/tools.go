package turn

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/turnstream/turnstream/internal/calltoken"
	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/history"
	"github.com/turnstream/turnstream/internal/redact"
	"github.com/turnstream/turnstream/internal/tracing"
	"github.com/turnstream/turnstream/pkg/wire"
)

// plan checks a finalized call before it may run: its name must be among
// the offered tools and its arguments one JSON object matching the tool's
// schema. A malformed or invalid call gets a correlated error result the
// model can correct: a planning error, not a provider one. plan returns
// its reason ("" for a call that may run) and the message the model reads.
func (r *run) plan(c wire.Call) (reason wire.PlanningError, message string) {
	if _, ok := r.tools[c.Name]; !ok {
		names := make([]string, 0, len(r.req.Tools))
		for _, t := range r.req.Tools {
			names = append(names, t.Name)
		}
		// The model's name for the tool is redacted before it is clipped,
		// so a cut cannot leave part of a credential unrecognized; the
		// available names are validated tokens.
		name, _ := redact.Redact(c.Name)
		return wire.PlanningUnknownTool, "error: there is no tool named " + strconv.Quote(clip(name, 2*describeValueLen)) + "; the available tools are: " + strings.Join(names, ", ") + ". This call was not run."
	}
	if err := r.schemas.Check(c.Name, r.arguments(c)); err != nil {
		// Check never quotes a value, and redacts the names it quotes.
		return wire.PlanningInvalidArguments, "error: " + err.Error() + ". This call was not run; call the tool again with corrected arguments."
	}
	return "", ""
}

// runTools plans, dispatches and awaits the pending calls of the turn's last
// assistant message, then appends one tool message per call in call order.
func (r *run) runTools(ctx context.Context, st history.TurnState, pending []wire.Call) error {
	step := st.Steps
	results := make(map[string]*wire.Message, len(pending))
	var dispatch, awaitOnly []wire.Call
	for _, c := range pending {
		if reason, text := r.plan(c); reason != "" {
			results[c.ID] = &wire.Message{Step: step, Role: wire.RoleTool, ToolCallID: c.ID, Content: text, IsError: true, Synthesized: true}
			r.emit(step, 0, wire.ToolResultEvent{ToolCallRef: wire.ToolCallRef{Tool: token(c.Name), CallID: c.ID}, IsError: true, PlanningError: reason})
			continue
		}
		if c.ArgumentsRedacted && r.faithful[c.ID] == "" {
			// A redelivered turn: the faithful arguments were never stored,
			// so the call cannot be dispatched again; the earlier delivery
			// may have, so its result is still awaited, never invented.
			awaitOnly = append(awaitOnly, c)
			continue
		}
		dispatch = append(dispatch, c)
	}
	if len(dispatch)+len(awaitOnly) > 0 {
		if err := r.dispatchAndAwait(ctx, st, dispatch, awaitOnly, results); err != nil {
			return err
		}
	}
	for _, c := range pending {
		if err := r.append(ctx, results[c.ID]); err != nil {
			return err
		}
	}
	return nil
}

// maxRejectedEvents bounds the tool.result-rejected events one await
// records: a flood of forged results costs the audit log no more than this.
const maxRejectedEvents = 32

// dispatchAndAwait dispatches calls and awaits their results, and those of
// awaitOnly, calls dispatched by an earlier delivery that cannot be sent
// again. A call without a result by the deadline gets an explicit,
// synthesized error result.
//
// Each dispatched call carries its token (Loop.CallKey), and only a result
// with its call's token is accepted (judgeResult); every other result
// naming the turn is ignored and recorded as tool.result-rejected, so a
// tool worker answers only the calls it received. Results of other turns
// of the session (late results of earlier turns, read because the
// follower starts before the dispatch) are ignored silently.
func (r *run) dispatchAndAwait(ctx context.Context, st history.TurnState, calls, awaitOnly []wire.Call, results map[string]*wire.Message) error {
	if r.loop.CallKey.IsZero() {
		return errors.New("turn: no call-token key (Loop.CallKey): tool calls cannot be dispatched")
	}
	step := st.Steps
	from := ResultsFrom{Since: r.loop.now()}
	if i := r.lastAssistantIndex(); i >= 0 && i < len(r.stored) && r.stored[i].Before(from.Since) {
		from.Since = r.stored[i] // a resumed turn: results may have arrived while no worker listened
	} else if r.last != nil && len(awaitOnly) == 0 {
		// Every result of this step is stored after the session's last
		// one as read now, before the first dispatch: the follower
		// starts there and reads none of the session's earlier results.
		// Unreadable, the follower starts by time.
		if after, err := r.last(ctx); err == nil {
			from.After = after
		} else {
			r.log.Warn().Err(err).Msg("the session's last tool result is unreadable; results are followed from the dispatch time")
		}
	}
	timeout := r.loop.ToolTimeout
	if timeout <= 0 {
		timeout = config.DefaultToolTimeout
	}
	deadline := r.loop.now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	names := make(map[string]string, len(calls))
	sent := make(map[string]time.Time, len(calls))
	// Each call's span lasts from its dispatch to its result; its context
	// goes to the tool worker in the call's headers. Whatever ends the
	// wait early ends the spans still open.
	spans := make(map[string]trace.Span, len(calls)+len(awaitOnly))
	defer func() {
		for _, span := range spans {
			tracing.End(span, true, "interrupted", tracing.KeyOutcome.String("interrupted"))
		}
	}()
	startSpan := func(c wire.Call, awaited bool) context.Context {
		sctx, span := r.loop.tracer().Start(ctx, tracing.SpanToolCall+" "+c.Name, trace.WithSpanKind(trace.SpanKindProducer),
			trace.WithAttributes(tracing.ToolCall(r.req.SessionID, r.req.TurnID, step, c.Name, c.ID)...),
			trace.WithAttributes(attribute.Bool("turnstream.await_only", awaited)))
		spans[c.ID] = span
		return sctx
	}
	endCall := func(id string, failed bool, outcome string) {
		if span, ok := spans[id]; ok {
			delete(spans, id)
			tracing.End(span, failed, outcome, tracing.KeyOutcome.String(outcome), tracing.KeyIsError.Bool(failed))
		}
	}
	for _, c := range calls {
		tc := &wire.ToolCall{
			SessionID: r.req.SessionID, TurnID: r.req.TurnID, Step: step,
			CallID: c.ID, Name: c.Name, Arguments: r.arguments(c), Deadline: deadline,
			Token: r.loop.CallKey.Sign(r.req.SessionID, r.req.TurnID, c.ID, c.Name),
		}
		if err := r.dispatch(startSpan(c, false), tc, deadline); err != nil {
			return err
		}
		r.loop.probe(ProbeDispatched)
		names[c.ID] = c.Name
		sent[c.ID] = r.loop.now()
		r.emit(step, 0, wire.ToolDispatched{ToolCallRef: wire.ToolCallRef{Tool: token(c.Name), CallID: c.ID}, DeadlineMS: ms(timeout)})
	}
	for _, c := range awaitOnly {
		names[c.ID] = c.Name
		sent[c.ID] = r.loop.now()
		startSpan(c, true)
	}
	calls = append(calls, awaitOnly...)

	// Results are read from the store, from before the first dispatch:
	// opening the follower after dispatching misses none, and a dispatch
	// is not held up by it.
	follower, err := r.open(ctx, from)
	if err != nil {
		return err
	}
	defer follower.Stop()
	waitCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	r.loop.probe(ProbeAwaiting)
	rejected := 0
	// Calls of the turn's earlier steps already answered in the session
	// log: their results are genuine, not forgeries.
	answeredBefore := map[string]bool{}
	for _, m := range r.msgs[min(st.Start, len(r.msgs)):] {
		if m.Role == wire.RoleTool && m.ToolCallID != "" {
			if _, pending := names[m.ToolCallID]; !pending {
				answeredBefore[m.ToolCallID] = true
			}
		}
	}
	for waiting := len(calls); waiting > 0; {
		res, err := follower.Next(waitCtx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			break // the tools' deadline passed
		}
		if res.TurnID != r.req.TurnID || answeredBefore[res.CallID] {
			// Another turn's (an earlier turn's late result), or the
			// answer of a call of an earlier step of this turn, read again
			// because the follower starts before this step's dispatch.
			continue
		}
		name, reason := judgeResult(r.loop.CallKey, r.req.SessionID, r.req.TurnID, res, names, results)
		if reason != "" {
			if rejected++; rejected <= maxRejectedEvents {
				p := wire.ToolResultRejected{Reason: wire.ResultRejection(reason)}
				if name != "" {
					p.Tool, p.CallID = token(name), res.CallID
				}
				r.emit(step, 0, p)
			}
			continue
		}
		r.loop.probe(ProbeResult)
		m, err := r.resultMessage(step, res)
		if err != nil {
			return err
		}
		results[res.CallID] = m
		outcome := "ok"
		if res.IsError {
			outcome = "error"
		}
		endCall(res.CallID, res.IsError, outcome)
		r.emit(step, 0, wire.ToolResultEvent{
			ToolCallRef: wire.ToolCallRef{Tool: token(name), CallID: res.CallID}, IsError: res.IsError,
			DurationMS:      ms(r.loop.now().Sub(sent[res.CallID])),
			ContentRedacted: m.ContentRedacted, ContentTruncated: m.ContentTruncated, ContentBytes: max(m.ContentBytes, len(m.Content)),
		})
		waiting--
	}
	if rejected > maxRejectedEvents {
		r.log.Warn().Int("rejected", rejected).Int("recorded", maxRejectedEvents).Msg("tool results rejected; only the first were recorded as events")
	}
	for _, c := range calls {
		if results[c.ID] != nil {
			continue
		}
		results[c.ID] = &wire.Message{Step: step, Role: wire.RoleTool, ToolCallID: c.ID, IsError: true, Synthesized: true,
			Content: "error: the tool did not return a result before its deadline; it may not have run"}
		endCall(c.ID, true, string(wire.RepairDeadlineExceeded))
		r.emit(step, 0, wire.ToolRepaired{ToolCallRef: wire.ToolCallRef{Tool: token(c.Name), CallID: c.ID}, Reason: wire.RepairDeadlineExceeded})
	}
	return nil
}

// judgeResult decides whether res, a result naming the turn (session,
// turn), answers one of its pending calls (pending: call id to tool name;
// answered: the results the turn has). It accepts the result ("") only if
// its session is the turn's, its call is pending and not yet answered, and
// its token verifies under key for the session, the turn, the call id and
// the pending call's tool; otherwise it returns the reason to reject it
// (a wire.ResultRejected constant). tool is the pending call's tool when
// res names a pending call, "" when not.
func judgeResult(key calltoken.Key, session, turn string, res wire.ToolResult, pending map[string]string, answered map[string]*wire.Message) (tool, reason string) {
	tool, ok := pending[res.CallID]
	switch {
	case res.SessionID != session:
		return tool, wire.ResultRejectedWrongSession
	case !ok:
		return "", wire.ResultRejectedUnknownCall
	case !key.Verify(res.Token, session, turn, res.CallID, tool):
		return tool, wire.ResultRejectedBadToken
	case answered[res.CallID] != nil:
		return tool, wire.ResultRejectedDuplicate
	}
	return tool, ""
}

// closeCalls gives every pending call an explicit, synthesized error result
// so the session log stays a valid conversation.
func (r *run) closeCalls(ctx context.Context, st history.TurnState, pending []wire.Call, text string) error {
	for _, c := range pending {
		m := &wire.Message{Step: st.Steps, Role: wire.RoleTool, ToolCallID: c.ID, Content: "error: " + text, IsError: true, Synthesized: true}
		if err := r.append(ctx, m); err != nil {
			return err
		}
		r.emit(st.Steps, 0, wire.ToolRepaired{ToolCallRef: wire.ToolCallRef{Tool: token(c.Name), CallID: c.ID}, Reason: wire.RepairClosedUnexecuted})
	}
	return nil
}

func (r *run) lastAssistantIndex() int {
	for i := len(r.msgs) - 1; i >= 0; i-- {
		if r.msgs[i].Role == wire.RoleAssistant {
			return i
		}
	}
	return -1
}

// arguments are the text a call runs with: the faithful arguments of a call
// stored redacted, when this delivery holds them.
func (r *run) arguments(c wire.Call) string {
	if f, ok := r.faithful[c.ID]; ok && c.ArgumentsRedacted {
		return f
	}
	return c.Arguments
}

// Dispatch bounds: a publish whose ack is lost (a leader election, a
// reconnect) is retried, deduplicated by the call's identity, rather than
// left to block the turn until its wall clock.
const (
	dispatchTryTimeout = 5 * time.Second
	dispatchRetryDelay = 250 * time.Millisecond
)

// dispatch publishes a call, each try bounded by dispatchTryTimeout, until
// it is stored, the tools' deadline passes or the turn's context ends. A
// fenced or oversized dispatch is not retried.
func (r *run) dispatch(ctx context.Context, tc *wire.ToolCall, deadline time.Time) error {
	for delay := dispatchRetryDelay; ; delay = min(2*delay, 2*time.Second) {
		tctx, cancel := context.WithTimeout(ctx, dispatchTryTimeout)
		err := r.w.Dispatch(tctx, tc)
		cancel()
		if err == nil || errors.Is(err, ErrFenced) || errors.Is(err, wire.ErrRecordTooLarge) || ctx.Err() != nil {
			return err
		}
		if !r.loop.now().Add(delay).Before(deadline) {
			return fmt.Errorf("turn: dispatch %s: %w", tc.CallID, err)
		}
		r.log.Warn().Err(err).Str("call_id", tc.CallID).Msg("dispatch failed; retrying")
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

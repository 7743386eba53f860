package turn

import (
	"errors"
	"fmt"

	"github.com/turnstream/turnstream/internal/history"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/pkg/wire"
)

// stepObserver relays one step's frames, each as its raw frame (TURN_RAW,
// the provider's bytes) and its chunk (the normalized delta, for every
// client), and its executor decisions as events and attempt markers.
type stepObserver struct {
	r       *run
	step    int
	base    int // attempts numbered before this execution (resumed turns)
	attempt int
	seq     int
	// held is the completed marker of the step's last attempt, published
	// only once the loop knows whether the attempt counts (settle): its
	// message persisted, or retried, or refused. A step thus never shows
	// two completed attempts, and an attempt whose message a crash lost
	// is ended by the next delivery instead (run.endTail).
	held *wire.Chunk
}

var _ provider.Observer = (*stepObserver)(nil)

// Step is the step whose execution the observer relays. An executor that
// wraps the loop's (metrics, traces) tells a step's execution by it from
// the loop's other ones (a history summary's), which have no Step.
func (o *stepObserver) Step() int { return o.step }

// Route is the route the turn's request names ("" for the default
// route): validated against the config, so a bounded label.
func (o *stepObserver) Route() string { return o.r.req.Route }

// Attempt is the number the step's chunks give the execution's attempt n
// (a resumed or retried step continues the numbering).
func (o *stepObserver) Attempt(n int) int { return n + o.base }

func (o *stepObserver) Frame(attempt int, target provider.Target, f provider.Frame) error {
	attempt += o.base
	if attempt != o.attempt {
		o.attempt, o.seq = attempt, 0
	}
	o.seq++
	if o.seq == 3 {
		o.r.loop.probe(ProbeStreaming)
	}
	// The raw frame first: a frame whose bytes cannot be stored gets no
	// chunk either, so every chunk of a frame has its raw frame.
	err := o.r.w.Raw(&wire.RawFrame{
		SessionID: o.r.req.SessionID, TurnID: o.r.req.TurnID,
		Step: o.step, Attempt: attempt, Seq: o.seq,
		Provider: target.Provider, Model: target.Model,
		Event: f.Event, Bytes: f.Raw,
	})
	if err == nil {
		err = o.r.w.Chunk(&wire.Chunk{
			SessionID: o.r.req.SessionID, TurnID: o.r.req.TurnID,
			Step: o.step, Attempt: attempt, Seq: o.seq,
			Provider: target.Provider, Model: target.Model,
			Event: f.Event, Delta: f.Delta,
		})
	}
	if errors.Is(err, wire.ErrRecordTooLarge) {
		// The provider's frame is too large to relay: the attempt's
		// failure, not the relay's, so it is not redelivered.
		return fmt.Errorf("%w: %w", provider.TooLarge(provider.LimitFrameBytes), err)
	}
	return err
}

func (o *stepObserver) Event(ev provider.Event) {
	attempt := ev.Attempt + o.base
	a := wire.LLMAttempt{Provider: token(ev.Target.Provider), Model: token(ev.Target.Model)}
	if f := ev.Failure; f != nil {
		a.Class, a.HTTPStatus, a.RequestID = wire.FailureClass(f.Class), f.Status, token(f.RequestID)
		a.ProviderDelayMS = ms(f.RetryAfter)
	}
	switch ev.Kind {
	case provider.EventRequest:
		o.r.emit(o.step, attempt, wire.LLMRequest{LLMAttempt: a})
	case provider.EventFinish:
		p := wire.LLMFinish{LLMAttempt: a, DurationMS: ms(ev.Duration), Outcome: wire.Marker(ev.Marker), FinishReason: wire.FinishReason(ev.FinishReason)}
		if u := ev.Usage; u != nil {
			p.InputTokens, p.CachedInputTokens, p.OutputTokens, p.ReasoningTokens = u.InputTokens, u.CachedInputTokens, u.OutputTokens, u.ReasoningTokens
		}
		o.r.emit(o.step, attempt, p)
		o.marker(attempt, ev)
	case provider.EventRetry:
		o.r.emit(o.step, attempt, wire.LLMRetry{LLMAttempt: a, Policy: wire.RetryMode(ev.Policy), Retry: ev.Retry, DelayMS: ms(ev.Delay)})
	case provider.EventRetryStarted:
		o.r.emit(o.step, attempt, wire.LLMRetryStarted{LLMAttempt: a, Retry: ev.Retry, DelayMS: ms(ev.Delay)})
	case provider.EventFallback:
		o.r.emit(o.step, attempt, wire.LLMFallback{
			LLMAttempt: a, Skipped: wire.SkipReason(ev.Skipped),
			ToProvider: token(ev.Next.Provider), ToModel: token(ev.Next.Model),
		})
	}
}

// marker ends an attempt's chunks so a UI can drop text that will not count.
func (o *stepObserver) marker(attempt int, ev provider.Event) {
	if attempt != o.attempt {
		o.attempt, o.seq = attempt, 0
	}
	o.seq++
	c := &wire.Chunk{
		SessionID: o.r.req.SessionID, TurnID: o.r.req.TurnID,
		Step: o.step, Attempt: attempt, Seq: o.seq,
		Provider: ev.Target.Provider, Model: ev.Target.Model,
		Marker: ev.Marker,
	}
	if f := ev.Failure; f != nil {
		c.Failure = string(f.Class)
		c.HTTPStatus, c.ProviderDelayMS, c.RequestID = f.Status, f.RetryAfter.Milliseconds(), token(f.RequestID)
	}
	if ev.Marker == wire.MarkerCompleted {
		o.held = c
		return
	}
	o.publish(c)
}

// settle publishes the held completed marker as marker: completed when
// the attempt's outcome was persisted, retrying or failed when it does not
// count.
func (o *stepObserver) settle(marker string) {
	if o.held == nil {
		return
	}
	c := o.held
	o.held = nil
	c.Marker = marker
	o.publish(c)
}

// publish publishes an attempt marker. A failure is kept by the writer
// (as emit's is): its next Flush and its Terminal return it, and the
// delivery fails there, so a turn never ends with a marker missing.
func (o *stepObserver) publish(c *wire.Chunk) {
	if err := o.r.w.Chunk(c); err != nil {
		o.r.log.Warn().Err(err).Msg("attempt marker publish failed; the delivery fails at the writer's next flush")
	}
}

// endTail ends the attempt an earlier delivery left without a marker (it
// died mid-stream, or before its completed marker): completed if the
// step's message reached the session log, else retrying (this delivery
// runs the step again).
func (r *run) endTail(st history.TurnState) {
	t := r.tail
	if t.Attempt == 0 || t.Marker != "" {
		return
	}
	marker := wire.MarkerRetrying
	for _, m := range r.msgs[st.Start:] {
		if m.Role == wire.RoleAssistant && m.Step == t.Step {
			marker = wire.MarkerCompleted
		}
	}
	if err := r.w.Chunk(&wire.Chunk{
		SessionID: r.req.SessionID, TurnID: r.req.TurnID,
		Step: t.Step, Attempt: t.Attempt, Seq: t.Seq + 1, Marker: marker,
	}); err != nil {
		// Kept by the writer, as publish's failures are.
		r.log.Warn().Err(err).Msg("ending the earlier delivery's attempt failed; the delivery fails at the writer's next flush")
	}
}

package tracing

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/turnstream/turnstream/internal/provider"
)

// executor runs a provider request along a chain (turn.Executor).
type executor interface {
	Execute(ctx context.Context, chain []provider.Target, req *provider.Request, obs provider.Observer) (*provider.Result, error)
}

// Executor traces each provider attempt of the executions of the executor
// it wraps as a "chat <model>" span, a child of the execution's context
// (a step's span), and records retries and fallbacks as events of that
// span. It passes every call on unchanged.
type Executor struct {
	next   executor
	tracer trace.Tracer
	system func(provider string) string
}

// NewExecutor wraps next. system names a configured provider's GenAI
// system (its API's provider.API.System); nil or "" leaves it out.
func NewExecutor(tracer trace.Tracer, next executor, system func(provider string) string) *Executor {
	return &Executor{next: next, tracer: tracer, system: system}
}

// stepper is the observer of a turn's step (the turn loop's), as in
// internal/metrics: a wrapper keeps its methods, so wrappers compose.
type stepper interface {
	Step() int
	Route() string
	// Attempt numbers the execution's attempt n as the turn's chunks do
	// (a resumed or retried step continues the numbering).
	Attempt(n int) int
}

// Execute runs next's Execute with an observer that traces its attempts.
func (e *Executor) Execute(ctx context.Context, chain []provider.Target, req *provider.Request, obs provider.Observer) (*provider.Result, error) {
	t := &attempts{e: e, ctx: ctx, next: obs}
	var o provider.Observer = t
	if st, ok := obs.(stepper); ok {
		t.route, t.number = st.Route(), st.Attempt
		o = stepAttempts{attempts: t, stepper: st}
	} else {
		t.purpose = "history_summary" // the loop's only other execution
	}
	defer func() {
		if t.span != nil {
			// An attempt the execution left without its finish: cancelled,
			// relayed no further, or a panic.
			End(t.span, true, "interrupted")
		}
	}()
	return e.next.Execute(ctx, chain, req, o)
}

// attempts traces one execution; the executor calls it from one goroutine
// at a time.
type attempts struct {
	e      *Executor
	ctx    context.Context
	next   provider.Observer
	route  string
	number func(int) int
	// purpose marks the attempts of an execution that is no step's.
	purpose string
	span    trace.Span // the attempt in flight
}

type stepAttempts struct {
	*attempts
	stepper
}

func (t *attempts) Frame(attempt int, target provider.Target, f provider.Frame) error {
	return t.next.Frame(attempt, target, f)
}

func (t *attempts) Event(ev provider.Event) {
	switch ev.Kind {
	case provider.EventRequest:
		if t.span != nil {
			End(t.span, true, "interrupted")
		}
		attempt := ev.Attempt
		if t.number != nil {
			attempt = t.number(attempt)
		}
		attrs := []attribute.KeyValue{
			KeyOperation.String(OpChat),
			KeyRequestModel.String(ev.Target.Model),
			KeyProvider.String(ev.Target.Provider),
			KeyAttempt.Int(attempt),
		}
		if t.e.system != nil {
			if sys := t.e.system(ev.Target.Provider); sys != "" {
				attrs = append(attrs, KeyProviderName.String(sys), KeySystem.String(sys))
			}
		}
		if t.route != "" {
			attrs = append(attrs, KeyRoute.String(t.route))
		}
		if t.purpose != "" {
			attrs = append(attrs, KeyPurpose.String(t.purpose))
		}
		_, t.span = t.e.tracer.Start(t.ctx, SpanChat+" "+ev.Target.Model,
			trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	case provider.EventFinish:
		if t.span == nil {
			break
		}
		attrs := []attribute.KeyValue{KeyMarker.String(ev.Marker), KeyDuration.Int64(ev.Duration.Milliseconds())}
		if ev.FinishReason != "" {
			attrs = append(attrs, KeyFinishReasons.StringSlice([]string{ev.FinishReason}))
		}
		if u := ev.Usage; u != nil {
			attrs = append(attrs, KeyInputTokens.Int64(u.InputTokens), KeyOutputTokens.Int64(u.OutputTokens),
				KeyCachedInputTokens.Int64(u.CachedInputTokens))
		}
		failed, class := ev.Failure != nil, ""
		if failed {
			class = string(ev.Failure.Class)
			if ev.Failure.Status != 0 {
				attrs = append(attrs, attribute.Int("http.response.status_code", ev.Failure.Status))
			}
		}
		End(t.span, failed, class, attrs...)
		t.span = nil
	case provider.EventRetry, provider.EventRetryStarted, provider.EventFallback:
		// The step's span records the executor's decisions between
		// attempts.
		attrs := []attribute.KeyValue{KeyProvider.String(ev.Target.Provider), KeyRequestModel.String(ev.Target.Model)}
		name := "retry"
		switch ev.Kind {
		case provider.EventRetry:
			attrs = append(attrs, attribute.String("turnstream.policy", ev.Policy), attribute.Int("turnstream.retry", ev.Retry),
				attribute.Int64("turnstream.delay_ms", ev.Delay.Milliseconds()))
		case provider.EventRetryStarted:
			name = "retry_started"
			attrs = append(attrs, attribute.Int("turnstream.retry", ev.Retry))
		case provider.EventFallback:
			name = "fallback"
			attrs = append(attrs, attribute.String("turnstream.to_provider", ev.Next.Provider),
				attribute.String("turnstream.to_model", ev.Next.Model))
			if ev.Skipped != "" {
				attrs = append(attrs, attribute.String("turnstream.skipped", ev.Skipped))
			}
		}
		if ev.Failure != nil {
			attrs = append(attrs, KeyErrorType.String(string(ev.Failure.Class)))
		}
		trace.SpanFromContext(t.ctx).AddEvent(name, trace.WithAttributes(attrs...), trace.WithTimestamp(time.Now()))
	}
	t.next.Event(ev)
}

package metrics

import (
	"context"
	"time"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/turn"
)

// Executor counts what the executor it wraps does, from the observer
// calls of each execution: steps, provider requests, retries and
// fallbacks, time to first chunk and tokens. It passes every call on
// unchanged.
type Executor struct {
	next turn.Executor
	set  *Set
}

var _ turn.Executor = (*Executor)(nil)

// Executor wraps next (the turn loop's executor).
func (s *Set) Executor(next turn.Executor) *Executor { return &Executor{next: next, set: s} }

// stepper is the observer of a turn's step (the turn loop's): the
// executions of other observers (history summaries) are not steps.
type stepper interface {
	Step() int
	Route() string
	// Attempt numbers the execution's attempts as the step's chunks do
	// (internal/tracing reads it through this wrapper).
	Attempt(n int) int
}

// Execute runs next's Execute with an observer that counts what it sees.
// The observer of a step stays one: the wrapper's observer has the Step
// and Route of the one it wraps, so wrappers compose in any order.
func (e *Executor) Execute(ctx context.Context, chain []provider.Target, req *provider.Request, obs provider.Observer) (*provider.Result, error) {
	t := &tee{next: obs, set: e.set, route: RouteSummary}
	var counted provider.Observer = t
	if st, ok := obs.(stepper); ok {
		t.route = st.Route()
		if t.route == "" {
			t.route = config.DefaultRoute
		}
		e.set.steps.WithLabelValues(t.route).Inc()
		counted = stepTee{tee: t, stepper: st}
	}
	return e.next.Execute(ctx, chain, req, counted)
}

// tee counts an execution's events and frames and passes them on. The
// executor calls it from one goroutine at a time.
type tee struct {
	next  provider.Observer
	set   *Set
	route string
	// attempt is the attempt in flight, sent when it was sent; seen
	// whether its first frame came.
	attempt int
	sent    time.Time
	seen    bool
}

// stepTee is the tee of a step's execution.
type stepTee struct {
	*tee
	stepper
}

func (t *tee) Frame(attempt int, target provider.Target, f provider.Frame) error {
	if attempt == t.attempt && !t.seen {
		t.seen = true
		t.set.firstChunk.WithLabelValues(target.Provider, target.Model).Observe(time.Since(t.sent).Seconds())
	}
	return t.next.Frame(attempt, target, f)
}

func (t *tee) Event(ev provider.Event) {
	s, p, m := t.set, ev.Target.Provider, ev.Target.Model
	switch ev.Kind {
	case provider.EventRequest:
		t.attempt, t.sent, t.seen = ev.Attempt, time.Now(), false
	case provider.EventFinish:
		s.requests.WithLabelValues(p, m, class(ev.Failure)).Inc()
		if u := ev.Usage; u != nil {
			s.inputTokens.WithLabelValues(t.route).Add(float64(max(u.InputTokens, 0)))
			s.cachedTokens.WithLabelValues(t.route).Add(float64(max(u.CachedInputTokens, 0)))
			s.outputTokens.WithLabelValues(t.route).Add(float64(max(u.OutputTokens, 0)))
		}
	case provider.EventRetry:
		s.retries.WithLabelValues(p, m, class(ev.Failure)).Inc()
	case provider.EventFallback:
		s.fallbacks.WithLabelValues(p, m, class(ev.Failure)).Inc()
	}
	t.next.Event(ev)
}

// class is a failure's class label: ClassOK without one.
func class(f *provider.Failure) string {
	if f == nil || f.Class == "" {
		return ClassOK
	}
	return string(f.Class)
}

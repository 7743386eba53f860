package metrics_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/metrics"
	"github.com/turnstream/turnstream/internal/metrics/metricstest"
	"github.com/turnstream/turnstream/internal/ops"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// chainExec plays what an executor reports for a chain of two targets:
// the first rate-limited, retried, then fallen back from; the second
// answering with usage.
type chainExec struct{ relayed []error }

func (x *chainExec) Execute(_ context.Context, chain []provider.Target, _ *provider.Request, obs provider.Observer) (*provider.Result, error) {
	a, b := chain[0], chain[1]
	limited := &provider.Failure{Class: provider.ClassRateLimit}
	obs.Event(provider.Event{Kind: provider.EventRequest, Attempt: 1, Target: a})
	obs.Event(provider.Event{Kind: provider.EventFinish, Attempt: 1, Target: a, Failure: limited, Marker: wire.MarkerRetrying})
	obs.Event(provider.Event{Kind: provider.EventRetry, Attempt: 1, Target: a, Failure: limited, Retry: 1})
	obs.Event(provider.Event{Kind: provider.EventRetryStarted, Attempt: 1, Target: a, Retry: 1})
	obs.Event(provider.Event{Kind: provider.EventRequest, Attempt: 2, Target: a})
	obs.Event(provider.Event{Kind: provider.EventFinish, Attempt: 2, Target: a, Failure: limited, Marker: wire.MarkerFailed})
	obs.Event(provider.Event{Kind: provider.EventFallback, Attempt: 2, Target: a, Next: b, Failure: limited})
	obs.Event(provider.Event{Kind: provider.EventRequest, Attempt: 3, Target: b})
	x.relayed = append(x.relayed, obs.Frame(3, b, provider.Frame{Raw: []byte("{}")}), obs.Frame(3, b, provider.Frame{Raw: []byte("{}")}))
	obs.Event(provider.Event{Kind: provider.EventFinish, Attempt: 3, Target: b, Marker: wire.MarkerCompleted,
		Usage: &wire.Usage{InputTokens: 100, CachedInputTokens: 40, OutputTokens: 7}})
	return &provider.Result{}, nil
}

// step is a step's observer, as the turn loop's names itself.
type step struct {
	route string
	frames,
	events int
}

func (s *step) Frame(int, provider.Target, provider.Frame) error { s.frames++; return nil }
func (s *step) Event(provider.Event)                             { s.events++ }
func (s *step) Step() int                                        { return 1 }
func (s *step) Route() string                                    { return s.route }
func (s *step) Attempt(n int) int                                { return n }

// plain is another execution's observer (a history summary's).
type plain struct{}

func (plain) Frame(int, provider.Target, provider.Frame) error { return errors.New("not relayed") }
func (plain) Event(provider.Event)                             {}

// TestExecutorCounts: the executor wrapper counts a step's route, its
// attempts by target and class, its retry and fallback, its first chunk
// and its tokens, passes every call on, and keeps the step's Step and
// Route for the executor it wraps; an execution that is not a step counts
// no step, and its tokens under RouteSummary.
func TestExecutorCounts(t *testing.T) {
	m := metrics.New()
	inner := &chainExec{}
	var steps []bool
	exec := m.Executor(stepCheck{next: inner, steps: &steps})
	chain := []provider.Target{{Provider: "a", Model: "m1"}, {Provider: "b", Model: "m2"}}
	obs := &step{route: ""}
	if _, err := exec.Execute(t.Context(), chain, &provider.Request{}, obs); err != nil {
		t.Fatal(err)
	}
	if obs.frames != 2 || obs.events != 9 {
		t.Errorf("the step's observer saw %d frames and %d events; want all 2 and 9 passed on", obs.frames, obs.events)
	}
	if _, err := exec.Execute(t.Context(), chain, &provider.Request{}, plain{}); err != nil {
		t.Fatal(err)
	}
	if inner.relayed[2] == nil {
		t.Error("a Frame error of the wrapped observer was not returned")
	}
	if len(steps) != 2 || !steps[0] || steps[1] {
		t.Errorf("the wrapped executor was given a step's observer %v; want [true false]: a step's stays one", steps)
	}
	m.Tools().CallDone("lookup", toolworker.CallOK, time.Millisecond)

	srv, err := ops.Start(ops.Options{Addr: "127.0.0.1:0", Gatherer: m.Gatherer()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	s := metricstest.Get(t, "http://"+srv.Addr()+ops.PathMetrics)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{metrics.StepsTotal, []string{"route", "default"}, 1},
		{metrics.StepsTotal, nil, 1},
		{metrics.ProviderRequestsTotal, []string{"provider", "a", "model", "m1", "class", "RATE_LIMIT"}, 4},
		{metrics.ProviderRequestsTotal, []string{"provider", "b", "model", "m2", "class", metrics.ClassOK}, 2},
		{metrics.ProviderRetriesTotal, []string{"provider", "a", "class", "RATE_LIMIT"}, 2},
		{metrics.ProviderFallbacksTotal, []string{"provider", "a", "model", "m1", "class", "RATE_LIMIT"}, 2},
		{metrics.FirstChunk + "_count", []string{"provider", "b"}, 2},
		{metrics.FirstChunk + "_count", []string{"provider", "a"}, 0},
		{metrics.InputTokensTotal, []string{"route", "default"}, 100},
		{metrics.CachedInputTokensTotal, []string{"route", "default"}, 40},
		{metrics.OutputTokensTotal, []string{"route", "default"}, 7},
		{metrics.InputTokensTotal, []string{"route", metrics.RouteSummary}, 100},
		{metrics.ToolCallsTotal, []string{"tool", "lookup", "outcome", "ok"}, 1},
	} {
		if got := s.Sum(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v; want %v\n%s", c.name, c.labels, got, c.want, s.Lines(c.name))
		}
	}
}

// stepCheck is an executor the wrapper wraps: it keeps whether each
// observer it is given is a step's.
type stepCheck struct {
	next  *chainExec
	steps *[]bool
}

func (c stepCheck) Execute(ctx context.Context, chain []provider.Target, req *provider.Request, obs provider.Observer) (*provider.Result, error) {
	_, isStep := obs.(interface {
		Step() int
		Route() string
	})
	*c.steps = append(*c.steps, isStep)
	return c.next.Execute(ctx, chain, req, obs)
}

// TestNilSetCountsNothing: the delivery hooks of a nil Set do nothing.
func TestNilSetCountsNothing(t *testing.T) {
	var m *metrics.Set
	m.DeliveryStarted(true)()
	m.DeliverySettled(wire.EventTurnCompleted, "", nil, time.Now())
	m.Rejected(wire.ReasonMalformed)
	m.PublishAcked(time.Millisecond)
}

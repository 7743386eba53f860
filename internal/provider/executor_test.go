package provider_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/pkg/wire"
)

// fakeClock advances only when slept on.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
	// onSleep, if set, runs inside Sleep (to cancel mid-wait).
	onSleep func()
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	f := c.onSleep
	c.mu.Unlock()
	if f != nil {
		f()
	}
	return ctx.Err()
}

// step is one scripted outcome of Adapter.Stream.
type step struct {
	resp   *assemble.Response
	err    error
	frames []string
	// before runs inside Stream, before it returns (to cancel the context).
	before func()
}

// fakeAdapter serves scripted outcomes and records what it was given.
type fakeAdapter struct {
	name       string
	prepareErr error
	steps      []step

	prepares int
	bodies   [][]byte
}

func (a *fakeAdapter) Prepare(req *provider.Request, model string) ([]byte, error) {
	a.prepares++
	if a.prepareErr != nil {
		return nil, a.prepareErr
	}
	// A fresh slice every time, so identity cannot fake equality.
	return fmt.Appendf(nil, `{"model":%q,"adapter":%q,"messages":%d}`, model, a.name, len(req.Messages)), nil
}

func (a *fakeAdapter) Stream(ctx context.Context, body []byte, sink provider.Sink) (*assemble.Response, error) {
	a.bodies = append(a.bodies, append([]byte(nil), body...))
	if len(a.steps) == 0 {
		return nil, errors.New("fakeAdapter: no step left")
	}
	s := a.steps[0]
	a.steps = a.steps[1:]
	for _, f := range s.frames {
		if err := sink(provider.Frame{Raw: []byte(f)}); err != nil {
			return nil, err
		}
	}
	if s.before != nil {
		s.before()
	}
	return s.resp, s.err
}

// recorder is an Observer that keeps everything.
type recorder struct {
	events []provider.Event
	frames []string
}

func (r *recorder) Frame(attempt int, target provider.Target, f provider.Frame) error {
	r.frames = append(r.frames, fmt.Sprintf("%d %s %s", attempt, target, f.Raw))
	return nil
}

func (r *recorder) Event(ev provider.Event) { r.events = append(r.events, ev) }

// trace renders events compactly: kind(attempt target marker/class retry delay).
func (r *recorder) trace() []string {
	var out []string
	for _, ev := range r.events {
		s := fmt.Sprintf("%s %d %s", ev.Kind, ev.Attempt, ev.Target)
		switch ev.Kind {
		case provider.EventFinish:
			s += " " + ev.Marker
			if ev.Failure != nil {
				s += " " + string(ev.Failure.Class)
			} else {
				s += " " + ev.FinishReason
			}
		case provider.EventRetry, provider.EventRetryStarted:
			s += fmt.Sprintf(" #%d %v", ev.Retry, ev.Delay)
		case provider.EventFallback:
			s += " -> " + ev.Next.String()
			if ev.Failure != nil {
				s += " " + string(ev.Failure.Class)
			}
		}
		out = append(out, s)
	}
	return out
}

func ok(text string) step {
	return step{resp: &assemble.Response{Text: text, FinishReason: wire.FinishStop, RawFinishReason: "stop", Terminal: true}}
}

func failed(c provider.Class) step {
	f := provider.Fail(c, "scripted", nil)
	f.Status = 500
	f.RequestID = "req_" + string(c)
	return step{err: f}
}

func failedHint(c provider.Class, hint time.Duration) step {
	f := provider.Fail(c, "scripted", nil)
	f.RetryAfter = hint
	return step{err: f}
}

var (
	targetA = provider.Target{Provider: "pa", Model: "ma"}
	targetB = provider.Target{Provider: "pb", Model: "mb"}
	targetC = provider.Target{Provider: "pc", Model: "mc"}
)

func testRequest() *provider.Request {
	return &provider.Request{System: "sys", Messages: []provider.Message{{Role: wire.RoleUser, Content: "hi"}}}
}

func TestExecutorSuccessFirstTry(t *testing.T) {
	a := &fakeAdapter{name: "a", steps: []step{{resp: ok("hello").resp, frames: []string{"f1", "f2"}}}}
	clock, rec := newFakeClock(), &recorder{}
	e := &provider.Executor{Clock: clock, Rand: func() float64 { return 0.5 }}
	res, err := e.Execute(t.Context(), []provider.Binding{{Target: targetA, Adapter: a}}, testRequest(), rec)
	if err != nil {
		t.Fatalf("Execute() error = %v; want nil", err)
	}
	if res.Response.Text != "hello" || res.Target != targetA {
		t.Errorf("Execute() = %q from %s; want %q from %s", res.Response.Text, res.Target, "hello", targetA)
	}
	wantAttempts := []provider.Attempt{{Number: 1, Target: targetA}}
	if !reflect.DeepEqual(res.Attempts, wantAttempts) {
		t.Errorf("Attempts = %+v; want %+v", res.Attempts, wantAttempts)
	}
	wantTrace := []string{"request 1 pa/ma", "finish 1 pa/ma completed stop"}
	if got := rec.trace(); !reflect.DeepEqual(got, wantTrace) {
		t.Errorf("events = %q; want %q", got, wantTrace)
	}
	wantFrames := []string{"1 pa/ma f1", "1 pa/ma f2"}
	if !reflect.DeepEqual(rec.frames, wantFrames) {
		t.Errorf("frames = %q; want %q", rec.frames, wantFrames)
	}
	if len(clock.sleeps) != 0 {
		t.Errorf("slept %v; want no sleep", clock.sleeps)
	}
}

func TestExecutorRetryThenSuccess(t *testing.T) {
	a := &fakeAdapter{name: "a", steps: []step{failed(provider.ClassServer), ok("second")}}
	clock, rec := newFakeClock(), &recorder{}
	e := &provider.Executor{Clock: clock, Rand: func() float64 { return 0.5 }}
	res, err := e.Execute(t.Context(), []provider.Binding{{Target: targetA, Adapter: a}}, testRequest(), rec)
	if err != nil {
		t.Fatalf("Execute() error = %v; want nil", err)
	}
	if res.Response.Text != "second" {
		t.Errorf("Execute().Response.Text = %q; want %q", res.Response.Text, "second")
	}
	wantTrace := []string{
		"request 1 pa/ma",
		"finish 1 pa/ma retrying SERVER",
		"retry 1 pa/ma #1 500ms",
		"retry-started 1 pa/ma #1 500ms",
		"request 2 pa/ma",
		"finish 2 pa/ma completed stop",
	}
	if got := rec.trace(); !reflect.DeepEqual(got, wantTrace) {
		t.Errorf("events = %q; want %q", got, wantTrace)
	}
	wantAttempts := []provider.Attempt{
		{Number: 1, Target: targetA, Class: provider.ClassServer, Status: 500, RequestID: "req_SERVER"},
		{Number: 2, Target: targetA},
	}
	if !reflect.DeepEqual(res.Attempts, wantAttempts) {
		t.Errorf("Attempts = %+v; want %+v", res.Attempts, wantAttempts)
	}
	if want := []time.Duration{500 * time.Millisecond}; !reflect.DeepEqual(clock.sleeps, want) {
		t.Errorf("slept %v; want %v", clock.sleeps, want)
	}
	if a.prepares != 1 {
		t.Errorf("Prepare called %d times; want 1", a.prepares)
	}
}

func TestExecutorSameBodyOnEveryRetry(t *testing.T) {
	a := &fakeAdapter{name: "a", steps: []step{failed(provider.ClassTransport), failed(provider.ClassRateLimit), ok("x")}}
	e := &provider.Executor{Clock: newFakeClock(), Rand: func() float64 { return 0.5 }}
	if _, err := e.Execute(t.Context(), []provider.Binding{{Target: targetA, Adapter: a}}, testRequest(), &recorder{}); err != nil {
		t.Fatalf("Execute() error = %v; want nil", err)
	}
	if a.prepares != 1 {
		t.Errorf("Prepare called %d times; want 1", a.prepares)
	}
	if len(a.bodies) != 3 {
		t.Fatalf("Stream called %d times; want 3", len(a.bodies))
	}
	want, _ := (&fakeAdapter{name: "a"}).Prepare(testRequest(), targetA.Model)
	for i, b := range a.bodies {
		if !bytes.Equal(b, want) {
			t.Errorf("body of attempt %d = %s; want %s", i+1, b, want)
		}
	}
}

func TestExecutorRetryDelays(t *testing.T) {
	tests := []struct {
		name   string
		policy provider.RetryPolicy
		steps  []step
		rnd    float64
		sleeps []time.Duration
		err    provider.Class // empty: success
	}{
		{
			name:   "exponential with jitter, then give up after two retries",
			steps:  []step{failed(provider.ClassServer), failed(provider.ClassServer), failed(provider.ClassServer), ok("never")},
			rnd:    1,
			sleeps: []time.Duration{550 * time.Millisecond, 1100 * time.Millisecond},
			err:    provider.ClassServer,
		},
		{
			name:   "provider hint honoured",
			steps:  []step{failedHint(provider.ClassRateLimit, 1100*time.Millisecond), ok("x")},
			rnd:    0,
			sleeps: []time.Duration{1100 * time.Millisecond},
		},
		{
			name:  "hint beyond the cap: no wait, no retry",
			steps: []step{failedHint(provider.ClassRateLimit, time.Minute), ok("never")},
			err:   provider.ClassRateLimit,
		},
		{
			name:   "max retries",
			policy: provider.RetryPolicy{MaxRetries: 3},
			steps:  []step{failed(provider.ClassTimeout), failed(provider.ClassTimeout), failed(provider.ClassTimeout), ok("x")},
			rnd:    0.5,
			sleeps: []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second},
		},
		{
			name:   "always mode has no count limit",
			policy: provider.RetryPolicy{Mode: provider.RetryAlways, Initial: time.Second, Max: 2 * time.Second},
			steps: []step{
				failed(provider.ClassAuth), failed(provider.ClassMalformed), failed(provider.ClassServer),
				failed(provider.ClassStreamClosed), ok("x"),
			},
			rnd:    0.5,
			sleeps: []time.Duration{time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second},
		},
		{
			name:   "never mode",
			policy: provider.RetryPolicy{Mode: provider.RetryNever},
			steps:  []step{failed(provider.ClassServer), ok("never")},
			err:    provider.ClassServer,
		},
		{
			name:  "not retryable in normal mode",
			steps: []step{failed(provider.ClassStreamClosed), ok("never")},
			err:   provider.ClassStreamClosed,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &fakeAdapter{name: "a", steps: tt.steps}
			clock := newFakeClock()
			e := &provider.Executor{Clock: clock, Rand: func() float64 { return tt.rnd }}
			_, err := e.Execute(t.Context(), []provider.Binding{{Target: targetA, Adapter: a, Retry: tt.policy}}, testRequest(), &recorder{})
			var got provider.Class
			if err != nil {
				got = provider.AsFailure(err).Class
			}
			if got != tt.err {
				t.Errorf("Execute() failure class = %q; want %q", got, tt.err)
			}
			if !reflect.DeepEqual(clock.sleeps, tt.sleeps) {
				t.Errorf("slept %v; want %v", clock.sleeps, tt.sleeps)
			}
		})
	}
}

func TestExecutorFallback(t *testing.T) {
	a := &fakeAdapter{name: "a", steps: []step{failed(provider.ClassAuth)}}
	b := &fakeAdapter{name: "b", steps: []step{ok("from b")}}
	clock, rec := newFakeClock(), &recorder{}
	e := &provider.Executor{Clock: clock, Rand: func() float64 { return 0.5 }}
	res, err := e.Execute(t.Context(), []provider.Binding{{Target: targetA, Adapter: a}, {Target: targetB, Adapter: b}}, testRequest(), rec)
	if err != nil {
		t.Fatalf("Execute() error = %v; want nil", err)
	}
	if res.Target != targetB || res.Response.Text != "from b" {
		t.Errorf("Execute() = %q from %s; want %q from %s", res.Response.Text, res.Target, "from b", targetB)
	}
	wantTrace := []string{
		"request 1 pa/ma",
		"finish 1 pa/ma failed AUTH",
		"fallback 1 pa/ma -> pb/mb AUTH",
		"request 2 pb/mb",
		"finish 2 pb/mb completed stop",
	}
	if got := rec.trace(); !reflect.DeepEqual(got, wantTrace) {
		t.Errorf("events = %q; want %q", got, wantTrace)
	}
	if len(clock.sleeps) != 0 {
		t.Errorf("slept %v; want no sleep before a fallback", clock.sleeps)
	}
	if a.prepares != 1 || b.prepares != 1 {
		t.Errorf("Prepare calls = %d, %d; want 1, 1", a.prepares, b.prepares)
	}
	wantB, _ := (&fakeAdapter{name: "b"}).Prepare(testRequest(), targetB.Model)
	if len(b.bodies) != 1 || !bytes.Equal(b.bodies[0], wantB) {
		t.Errorf("fallback body = %s; want its own Prepare output %s", b.bodies, wantB)
	}
	if len(res.Attempts) != 2 || res.Attempts[0].Class != provider.ClassAuth || res.Attempts[1].Target != targetB {
		t.Errorf("Attempts = %+v; want AUTH on %s then success on %s", res.Attempts, targetA, targetB)
	}
}

func TestExecutorFallbackAfterRetries(t *testing.T) {
	a := &fakeAdapter{name: "a", steps: []step{failed(provider.ClassServer), failed(provider.ClassServer), failed(provider.ClassServer)}}
	b := &fakeAdapter{name: "b", steps: []step{ok("b")}}
	rec := &recorder{}
	e := &provider.Executor{Clock: newFakeClock(), Rand: func() float64 { return 0.5 }}
	res, err := e.Execute(t.Context(), []provider.Binding{{Target: targetA, Adapter: a}, {Target: targetB, Adapter: b}}, testRequest(), rec)
	if err != nil {
		t.Fatalf("Execute() error = %v; want nil", err)
	}
	wantTrace := []string{
		"request 1 pa/ma", "finish 1 pa/ma retrying SERVER", "retry 1 pa/ma #1 500ms", "retry-started 1 pa/ma #1 500ms",
		"request 2 pa/ma", "finish 2 pa/ma retrying SERVER", "retry 2 pa/ma #2 1s", "retry-started 2 pa/ma #2 1s",
		"request 3 pa/ma", "finish 3 pa/ma failed SERVER", "fallback 3 pa/ma -> pb/mb SERVER",
		"request 4 pb/mb", "finish 4 pb/mb completed stop",
	}
	if got := rec.trace(); !reflect.DeepEqual(got, wantTrace) {
		t.Errorf("events = %q; want %q", got, wantTrace)
	}
	if len(res.Attempts) != 4 {
		t.Errorf("len(Attempts) = %d; want 4", len(res.Attempts))
	}
	if a.prepares != 1 || len(a.bodies) != 3 {
		t.Errorf("primary: Prepare %d, Stream %d; want 1, 3", a.prepares, len(a.bodies))
	}
}

func TestExecutorAllFail(t *testing.T) {
	a := &fakeAdapter{name: "a", steps: []step{failed(provider.ClassAuth)}}
	b := &fakeAdapter{name: "b", steps: []step{failed(provider.ClassQuota)}}
	c := &fakeAdapter{name: "c", steps: []step{failed(provider.ClassInvalidRequest)}}
	rec := &recorder{}
	e := &provider.Executor{Clock: newFakeClock()}
	chain := []provider.Binding{{Target: targetA, Adapter: a}, {Target: targetB, Adapter: b}, {Target: targetC, Adapter: c}}
	res, err := e.Execute(t.Context(), chain, testRequest(), rec)
	var f *provider.Failure
	if !errors.As(err, &f) || f.Class != provider.ClassInvalidRequest {
		t.Fatalf("Execute() error = %v; want the last failure, INVALID_REQUEST", err)
	}
	if res == nil || len(res.Attempts) != 3 || res.Response != nil {
		t.Fatalf("Execute() result = %+v; want 3 attempts and no response", res)
	}
	wantTrace := []string{
		"request 1 pa/ma", "finish 1 pa/ma failed AUTH", "fallback 1 pa/ma -> pb/mb AUTH",
		"request 2 pb/mb", "finish 2 pb/mb failed QUOTA", "fallback 2 pb/mb -> pc/mc QUOTA",
		"request 3 pc/mc", "finish 3 pc/mc failed INVALID_REQUEST",
	}
	if got := rec.trace(); !reflect.DeepEqual(got, wantTrace) {
		t.Errorf("events = %q; want %q", got, wantTrace)
	}
}

func TestExecutorPrepareFailureFallsBack(t *testing.T) {
	a := &fakeAdapter{name: "a", prepareErr: provider.Fail(provider.ClassInvalidRequest, "not serializable", nil)}
	b := &fakeAdapter{name: "b", steps: []step{ok("b")}}
	rec := &recorder{}
	e := &provider.Executor{Clock: newFakeClock()}
	res, err := e.Execute(t.Context(), []provider.Binding{{Target: targetA, Adapter: a}, {Target: targetB, Adapter: b}}, testRequest(), rec)
	if err != nil {
		t.Fatalf("Execute() error = %v; want nil", err)
	}
	if res.Target != targetB {
		t.Errorf("Execute().Target = %s; want %s", res.Target, targetB)
	}
	if len(a.bodies) != 0 {
		t.Errorf("Stream called %d times after Prepare failed; want 0", len(a.bodies))
	}
	wantTrace := []string{"fallback 0 pa/ma -> pb/mb INVALID_REQUEST", "request 1 pb/mb", "finish 1 pb/mb completed stop"}
	if got := rec.trace(); !reflect.DeepEqual(got, wantTrace) {
		t.Errorf("events = %q; want %q", got, wantTrace)
	}
}

func TestExecutorNoTargets(t *testing.T) {
	e := &provider.Executor{Clock: newFakeClock()}
	_, err := e.Execute(t.Context(), nil, testRequest(), &recorder{})
	if f := provider.AsFailure(err); f == nil || f.Class != provider.ClassNoRoute {
		t.Errorf("Execute(no targets) error = %v; want NO_ROUTE", err)
	}
}

func TestExecutorCancellation(t *testing.T) {
	t.Run("during a stream", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		a := &fakeAdapter{name: "a", steps: []step{{err: provider.Fail(provider.ClassTransport, "reset", nil), before: cancel}, ok("never")}}
		b := &fakeAdapter{name: "b", steps: []step{ok("never")}}
		clock, rec := newFakeClock(), &recorder{}
		e := &provider.Executor{Clock: clock}
		_, err := e.Execute(ctx, []provider.Binding{{Target: targetA, Adapter: a}, {Target: targetB, Adapter: b}}, testRequest(), rec)
		if f := provider.AsFailure(err); f == nil || f.Class != provider.ClassCancelled {
			t.Fatalf("Execute() error = %v; want CANCELLED", err)
		}
		if len(a.bodies) != 1 || len(b.bodies) != 0 || b.prepares != 0 {
			t.Errorf("Stream calls = %d, %d (b prepared %d); want 1, 0 (0)", len(a.bodies), len(b.bodies), b.prepares)
		}
		if len(clock.sleeps) != 0 {
			t.Errorf("slept %v; want none", clock.sleeps)
		}
		wantTrace := []string{"request 1 pa/ma", "finish 1 pa/ma failed CANCELLED"}
		if got := rec.trace(); !reflect.DeepEqual(got, wantTrace) {
			t.Errorf("events = %q; want %q", got, wantTrace)
		}
	})
	t.Run("during the retry wait", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		a := &fakeAdapter{name: "a", steps: []step{failed(provider.ClassServer), ok("never")}}
		b := &fakeAdapter{name: "b", steps: []step{ok("never")}}
		clock, rec := newFakeClock(), &recorder{}
		clock.onSleep = cancel
		e := &provider.Executor{Clock: clock, Rand: func() float64 { return 0.5 }}
		_, err := e.Execute(ctx, []provider.Binding{{Target: targetA, Adapter: a}, {Target: targetB, Adapter: b}}, testRequest(), rec)
		if f := provider.AsFailure(err); f == nil || f.Class != provider.ClassCancelled {
			t.Fatalf("Execute() error = %v; want CANCELLED", err)
		}
		if len(a.bodies) != 1 || len(b.bodies) != 0 {
			t.Errorf("Stream calls = %d, %d; want 1, 0", len(a.bodies), len(b.bodies))
		}
		for _, ev := range rec.events {
			if ev.Kind == provider.EventRetryStarted || ev.Kind == provider.EventFallback {
				t.Errorf("event %s after cancellation; want none", ev.Kind)
			}
		}
	})
	t.Run("adapter reports cancellation", func(t *testing.T) {
		a := &fakeAdapter{name: "a", steps: []step{{err: provider.AsFailure(context.Canceled)}, ok("never")}}
		b := &fakeAdapter{name: "b", steps: []step{ok("never")}}
		e := &provider.Executor{Clock: newFakeClock(), Rand: func() float64 { return 0.5 }}
		chain := []provider.Binding{{Target: targetA, Adapter: a, Retry: provider.RetryPolicy{Mode: provider.RetryAlways}}, {Target: targetB, Adapter: b}}
		_, err := e.Execute(t.Context(), chain, testRequest(), &recorder{})
		if f := provider.AsFailure(err); f == nil || f.Class != provider.ClassCancelled {
			t.Fatalf("Execute() error = %v; want CANCELLED", err)
		}
		if len(a.bodies) != 1 || len(b.bodies) != 0 {
			t.Errorf("Stream calls = %d, %d; want 1, 0", len(a.bodies), len(b.bodies))
		}
	})
}

func TestExecutorSinkErrorAborts(t *testing.T) {
	a := &fakeAdapter{name: "a", steps: []step{{resp: ok("x").resp, frames: []string{"f"}}}}
	sinkErr := errors.New("relay down")
	obs := &failingObserver{err: sinkErr}
	e := &provider.Executor{Clock: newFakeClock(), Rand: func() float64 { return 0.5 }}
	_, err := e.Execute(t.Context(), []provider.Binding{{Target: targetA, Adapter: a, Retry: provider.RetryPolicy{Mode: provider.RetryNever}}}, testRequest(), obs)
	if !errors.Is(err, sinkErr) {
		t.Errorf("Execute() error = %v; want it to wrap %v", err, sinkErr)
	}
}

type failingObserver struct{ err error }

func (o *failingObserver) Frame(int, provider.Target, provider.Frame) error { return o.err }
func (o *failingObserver) Event(provider.Event)                             {}

func TestEventKindString(t *testing.T) {
	tests := []struct {
		k    provider.EventKind
		want string
	}{
		{provider.EventRequest, "request"},
		{provider.EventFinish, "finish"},
		{provider.EventRetry, "retry"},
		{provider.EventRetryStarted, "retry-started"},
		{provider.EventFallback, "fallback"},
		{provider.EventKind(99), "event(99)"},
	}
	for _, tt := range tests {
		if got := tt.k.String(); got != tt.want {
			t.Errorf("EventKind(%d).String() = %q; want %q", tt.k, got, tt.want)
		}
	}
}

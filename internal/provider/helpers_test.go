package provider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/scripted"
	"github.com/turnstream/turnstream/pkg/wire"
)

// fakeClock never waits: Sleep records the delay, advances Now by it and
// returns at once (or ctx's error). Time passes only when slept on or
// advanced by a fake adapter.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
	// onSleep, if set, runs inside Sleep after the delay is recorded (to
	// cancel the context mid-wait, or to log the wait into a trace).
	onSleep func(d time.Duration)
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	f := c.onSleep
	c.mu.Unlock()
	if f != nil {
		f(d)
	}
	return ctx.Err()
}

// Sleeps returns the delays slept so far.
func (c *fakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// outcome is one scripted result of fakeAdapter.Stream.
type outcome struct {
	frames []string
	resp   *assemble.Response
	err    error
	// took advances the adapter's clock while "streaming".
	took time.Duration
	// do runs inside Stream after the frames, with the body Stream was
	// given (to cancel a context or mutate the body in place).
	do func(body []byte)
}

// fakeAdapter serves scripted outcomes in order and records what it was
// given. Its body is a deterministic serialization of the request, built
// afresh by every Prepare.
type fakeAdapter struct {
	t          *testing.T
	name       string
	clock      *fakeClock
	prepareErr error

	mu       sync.Mutex
	script   []outcome
	prepares []provider.Model
	bodies   [][]byte
}

func newFakeAdapter(t *testing.T, name string, script ...outcome) *fakeAdapter {
	t.Helper()
	return &fakeAdapter{t: t, name: name, script: script}
}

// fakeBody is what fakeAdapter.Prepare serializes.
type fakeBody struct {
	Adapter  string             `json:"adapter"`
	Model    string             `json:"model"`
	System   string             `json:"system"`
	Messages []provider.Message `json:"messages"`
	Tools    []wire.Tool        `json:"tools,omitempty"`
}

func (a *fakeAdapter) Prepare(req *provider.Request, model provider.Model) ([]byte, error) {
	a.mu.Lock()
	a.prepares = append(a.prepares, model)
	a.mu.Unlock()
	if a.prepareErr != nil {
		return nil, a.prepareErr
	}
	return json.Marshal(fakeBody{Adapter: a.name, Model: model.Name, System: req.System, Messages: req.Messages, Tools: req.Tools})
}

func (a *fakeAdapter) Stream(ctx context.Context, body []byte, sink provider.Sink) (*assemble.Response, error) {
	a.mu.Lock()
	a.bodies = append(a.bodies, append([]byte(nil), body...))
	if len(a.script) == 0 {
		a.mu.Unlock()
		a.t.Errorf("fakeAdapter %q: Stream called with no outcome left", a.name)
		return nil, provider.Fail(provider.ClassCancelled, "script exhausted", nil) // stops any mode
	}
	o := a.script[0]
	a.script = a.script[1:]
	a.mu.Unlock()
	for _, f := range o.frames {
		if err := sink(provider.Frame{Raw: []byte(f)}); err != nil {
			return nil, err // as is: the executor owns relay errors
		}
	}
	if o.took > 0 && a.clock != nil {
		a.clock.Advance(o.took)
	}
	if o.do != nil {
		o.do(body)
	}
	return o.resp, o.err
}

// Bodies returns copies of the bodies Stream received, in order.
func (a *fakeAdapter) Bodies() [][]byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([][]byte(nil), a.bodies...)
}

// Prepares is how many times Prepare was called.
func (a *fakeAdapter) Prepares() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.prepares)
}

// wantBody is fakeAdapter name's body for req on model.
func wantBody(t *testing.T, name, model string, req *provider.Request) []byte {
	t.Helper()
	b, err := (&fakeAdapter{name: name}).Prepare(req, provider.Model{Name: model})
	if err != nil {
		t.Fatalf("fakeAdapter.Prepare() error = %v", err)
	}
	return b
}

func done(text string) outcome {
	return outcome{resp: &assemble.Response{Text: text, FinishReason: wire.FinishStop, RawFinishReason: "stop", Terminal: true}}
}

func incomplete(text string) outcome {
	return outcome{resp: &assemble.Response{Text: text, FinishReason: wire.FinishIncomplete, RawFinishReason: "max_output_tokens", Terminal: true}}
}

// failed is an attempt failing with class c, HTTP 500 and a request id.
func failed(c provider.Class) outcome {
	f := provider.Fail(c, "scripted", nil)
	f.Status = 500
	f.RequestID = "req_" + string(c)
	return outcome{err: f}
}

// hinted is an attempt failing with class c and a provider delay hint.
func hinted(c provider.Class, hint time.Duration) outcome {
	f := provider.Fail(c, "scripted", nil)
	f.Status = 429
	f.RetryAfter = hint
	return outcome{err: f}
}

// repeat is n copies of o.
func repeat(n int, o outcome) []outcome {
	out := make([]outcome, n)
	for i := range out {
		out[i] = o
	}
	return out
}

// recorder is an Observer that keeps everything; frameErr, if set, fails
// every frame.
type recorder struct {
	mu       sync.Mutex
	events   []provider.Event
	frames   []string
	log      []string // trace lines, with sleeps interleaved by logSleeps
	frameErr error
}

func (r *recorder) Frame(attempt int, target provider.Target, f provider.Frame) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.frames = append(r.frames, fmt.Sprintf("%d %s %s", attempt, target, f.Raw))
	return r.frameErr
}

func (r *recorder) Event(ev provider.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
	r.log = append(r.log, render(ev))
}

// logSleeps makes clock's waits appear in the trace.
func (r *recorder) logSleeps(clock *fakeClock) {
	clock.onSleep = func(d time.Duration) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.log = append(r.log, fmt.Sprintf("sleep %v", d))
	}
}

// trace is the events (and logged sleeps) rendered compactly.
func (r *recorder) trace() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.log...)
}

// kinds returns the events of kind k.
func (r *recorder) kinds(k provider.EventKind) []provider.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []provider.Event
	for _, ev := range r.events {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}

// render: kind attempt target, then marker and class or finish (finish),
// policy, retry number and delay (retry), next and class or skip reason
// (fallback).
func render(ev provider.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d %s", ev.Kind, ev.Attempt, ev.Target)
	switch ev.Kind {
	case provider.EventFinish:
		b.WriteString(" " + ev.Marker)
		if ev.Failure != nil {
			b.WriteString(" " + string(ev.Failure.Class))
		} else {
			b.WriteString(" " + ev.FinishReason)
		}
	case provider.EventRetry:
		fmt.Fprintf(&b, " %s %s #%d %v", ev.Policy, ev.Failure.Class, ev.Retry, ev.Delay)
	case provider.EventRetryStarted:
		fmt.Fprintf(&b, " %s #%d %v", ev.Policy, ev.Retry, ev.Delay)
	case provider.EventFallback:
		b.WriteString(" -> " + ev.Next.String())
		if ev.Skipped != "" {
			b.WriteString(" skipped " + ev.Skipped)
		} else if ev.Failure != nil {
			b.WriteString(" " + string(ev.Failure.Class))
		}
	}
	return b.String()
}

var (
	targetA = provider.Target{Provider: "pa", Model: "ma"}
	targetB = provider.Target{Provider: "pb", Model: "mb"}
	targetC = provider.Target{Provider: "pc", Model: "mc"}
)

// noJitter is the default policy without jitter: delays are exact.
var noJitter = provider.RetryPolicy{Jitter: -1}

// model is a model with the scripted API's capabilities (text, tools).
func model(name string) provider.Model {
	return provider.Model{Name: name, ContextTokens: 1000, Capabilities: scripted.API.Capabilities}
}

// registration serves target's provider with a, advertising target's model.
func registration(target provider.Target, a provider.Adapter, policy provider.RetryPolicy) provider.Registration {
	return provider.Registration{
		ID:     target.Provider,
		Routes: []string{target.Provider},
		Metadata: provider.Metadata{
			ID: target.Provider, API: scripted.API.Name,
			Capabilities: scripted.API.Capabilities,
			Models:       []provider.Model{model(target.Model)},
		},
		Adapter: a,
		Retry:   policy,
	}
}

// binding is one target of a test chain: its adapter and policy.
type binding struct {
	target  provider.Target
	adapter *fakeAdapter
	policy  provider.RetryPolicy
}

// setup registers every binding and returns an executor on a fake clock
// shared with the adapters.
func setup(t *testing.T, bs ...binding) (*provider.Executor, *fakeClock, []provider.Target) {
	t.Helper()
	clock := newFakeClock()
	reg := provider.NewRegistry()
	var chain []provider.Target
	for _, b := range bs {
		chain = append(chain, b.target)
		if b.adapter == nil {
			continue // an unregistered target
		}
		b.adapter.clock = clock
		if _, err := reg.Register(registration(b.target, b.adapter, b.policy)); err != nil {
			t.Fatalf("Register(%s) error = %v", b.target, err)
		}
	}
	return &provider.Executor{Registry: reg, Clock: clock}, clock, chain
}

func testRequest() *provider.Request {
	return &provider.Request{System: "sys", Messages: []provider.Message{{Role: wire.RoleUser, Content: "hi"}}}
}

// classOf is err's failure class, "" for nil.
func classOf(err error) provider.Class {
	if err == nil {
		return ""
	}
	return provider.AsFailure(err).Class
}

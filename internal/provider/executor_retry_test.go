package provider_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/provider"
)

const ms = time.Millisecond

// within is the closed interval [lo, hi].
type within struct{ lo, hi time.Duration }

func (w within) has(d time.Duration) bool { return d >= w.lo && d <= w.hi }

func (w within) String() string { return fmt.Sprintf("[%v, %v]", w.lo, w.hi) }

// jittered is base ±10%.
func jittered(base time.Duration) within { return within{base - base/10, base + base/10} }

func checkSleeps(t *testing.T, got []time.Duration, want []within) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("slept %v; want %d sleeps within %v", got, len(want), want)
	}
	for i := range got {
		if !want[i].has(got[i]) {
			t.Errorf("sleep %d = %v; want within %v", i+1, got[i], want[i])
		}
	}
}

// TestExecutorRetryNormal: the retryable classes are retried twice on the
// same target with 500ms and 1s (±10%) delays, then the chain falls back.
func TestExecutorRetryNormal(t *testing.T) {
	for _, c := range []provider.Class{provider.ClassEmpty, provider.ClassRateLimit, provider.ClassServer, provider.ClassTimeout, provider.ClassTransport} {
		t.Run(string(c), func(t *testing.T) {
			a := newFakeAdapter(t, "a", repeat(3, failed(c))...)
			b := newFakeAdapter(t, "b", done("from b"))
			e, clock, chain := setup(t, binding{target: targetA, adapter: a}, binding{target: targetB, adapter: b})
			rec := &recorder{}
			res, err := e.Execute(t.Context(), chain, testRequest(), rec)
			if err != nil || res.Target != targetB {
				t.Fatalf("Execute() = %v, %v; want served by %s", res.Target, err, targetB)
			}
			if got := len(a.Bodies()); got != 3 {
				t.Errorf("Stream calls on %s = %d; want 3 (two retries)", targetA, got)
			}
			sleeps := clock.Sleeps()
			checkSleeps(t, sleeps, []within{{450 * ms, 550 * ms}, {900 * ms, 1100 * ms}})
			retries := rec.kinds(provider.EventRetry)
			if len(retries) != 2 {
				t.Fatalf("EventRetry count = %d; want 2", len(retries))
			}
			for i, ev := range retries {
				if ev.Policy != "normal" || ev.Failure.Class != c || ev.Retry != i+1 || ev.Delay != sleeps[i] || ev.Target != targetA {
					t.Errorf("EventRetry %d = policy %q class %s retry %d delay %v on %s; want normal %s %d %v on %s",
						i+1, ev.Policy, ev.Failure.Class, ev.Retry, ev.Delay, ev.Target, c, i+1, sleeps[i], targetA)
				}
			}
			if n := len(rec.kinds(provider.EventRetryStarted)); n != 2 {
				t.Errorf("EventRetryStarted count = %d; want 2", n)
			}
			fb := rec.kinds(provider.EventFallback)
			if len(fb) != 1 || fb[0].Failure.Class != c || fb[0].Target != targetA || fb[0].Next != targetB || fb[0].Attempt != 3 {
				t.Errorf("EventFallback = %+v; want one, %s after attempt 3 from %s to %s", fb, c, targetA, targetB)
			}
		})
	}
}

// TestExecutorNoRetryNormal: these classes move to the next target at once.
func TestExecutorNoRetryNormal(t *testing.T) {
	for _, c := range []provider.Class{
		provider.ClassQuota, provider.ClassAuth, provider.ClassTooLarge, provider.ClassInvalidRequest, provider.ClassPayment,
		provider.ClassMalformed, provider.ClassStreamClosed, provider.ClassProvider, provider.ClassResponseTooLarge,
	} {
		t.Run(string(c), func(t *testing.T) {
			a := newFakeAdapter(t, "a", failed(c))
			b := newFakeAdapter(t, "b", done("from b"))
			e, clock, chain := setup(t, binding{target: targetA, adapter: a}, binding{target: targetB, adapter: b})
			rec := &recorder{}
			res, err := e.Execute(t.Context(), chain, testRequest(), rec)
			if err != nil || res.Target != targetB {
				t.Fatalf("Execute() = %v, %v; want served by %s", res.Target, err, targetB)
			}
			if got := len(a.Bodies()); got != 1 {
				t.Errorf("Stream calls on %s = %d; want 1", targetA, got)
			}
			if got := clock.Sleeps(); len(got) != 0 {
				t.Errorf("slept %v; want none", got)
			}
			want := []string{
				"request 1 pa/ma", "finish 1 pa/ma failed " + string(c), "fallback 1 pa/ma -> pb/mb " + string(c),
				"request 2 pb/mb", "finish 2 pb/mb completed stop",
			}
			if got := rec.trace(); !slices.Equal(got, want) {
				t.Errorf("events = %q; want %q", got, want)
			}
		})
	}
}

// TestExecutorRetryDelaysAlways: a long always-mode sequence doubles from
// 500ms and stays at the 10s cap, each ±10%.
func TestExecutorRetryDelaysAlways(t *testing.T) {
	const failures = 12
	a := newFakeAdapter(t, "a", append(repeat(failures, failed(provider.ClassServer)), done("x"))...)
	e, clock, chain := setup(t, binding{target: targetA, adapter: a, policy: provider.RetryPolicy{Mode: provider.RetryAlways}})
	if _, err := e.Execute(t.Context(), chain, testRequest(), &recorder{}); err != nil {
		t.Fatalf("Execute() error = %v; want nil", err)
	}
	want := []within{jittered(500 * ms), jittered(time.Second), jittered(2 * time.Second), jittered(4 * time.Second), jittered(8 * time.Second)}
	for len(want) < failures {
		want = append(want, jittered(10*time.Second))
	}
	checkSleeps(t, clock.Sleeps(), want)
	if got := len(a.Bodies()); got != failures+1 {
		t.Errorf("Stream calls = %d; want %d", got, failures+1)
	}
}

func TestExecutorRetryModes(t *testing.T) {
	tests := []struct {
		name      string
		policy    provider.RetryPolicy
		script    []outcome
		wantClass provider.Class // "" success
		wantSleep []time.Duration
	}{
		{
			name:      "always retries AUTH",
			policy:    provider.RetryPolicy{Mode: provider.RetryAlways, Jitter: -1},
			script:    []outcome{failed(provider.ClassAuth), failed(provider.ClassQuota), failed(provider.ClassStreamClosed), done("x")},
			wantSleep: []time.Duration{500 * ms, time.Second, 2 * time.Second},
		},
		{
			name:      "always does not retry CANCELLED",
			policy:    provider.RetryPolicy{Mode: provider.RetryAlways, Jitter: -1},
			script:    []outcome{{err: provider.AsFailure(context.Canceled)}, done("never")},
			wantClass: provider.ClassCancelled,
		},
		{
			name:      "always with custom delays",
			policy:    provider.RetryPolicy{Mode: provider.RetryAlways, Initial: time.Second, Max: 2 * time.Second, Jitter: -1},
			script:    []outcome{failed(provider.ClassAuth), failed(provider.ClassMalformed), failed(provider.ClassServer), failed(provider.ClassEmpty), done("x")},
			wantSleep: []time.Duration{time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second},
		},
		{
			name:      "never",
			policy:    provider.RetryPolicy{Mode: provider.RetryNever},
			script:    []outcome{failed(provider.ClassServer), done("never")},
			wantClass: provider.ClassServer,
		},
		{
			name:      "normal with three retries",
			policy:    provider.RetryPolicy{MaxRetries: 3, Jitter: -1},
			script:    []outcome{failed(provider.ClassTimeout), failed(provider.ClassTimeout), failed(provider.ClassTimeout), done("x")},
			wantSleep: []time.Duration{500 * ms, time.Second, 2 * time.Second},
		},
		{
			name:      "normal gives up after two retries",
			policy:    noJitter,
			script:    []outcome{failed(provider.ClassServer), failed(provider.ClassServer), failed(provider.ClassServer), done("never")},
			wantClass: provider.ClassServer,
			wantSleep: []time.Duration{500 * ms, time.Second},
		},
		{
			name:      "negative MaxRetries: none",
			policy:    provider.RetryPolicy{MaxRetries: -1},
			script:    []outcome{failed(provider.ClassServer), done("never")},
			wantClass: provider.ClassServer,
		},
		{
			name:      "unknown mode is limited like normal",
			policy:    provider.RetryPolicy{Mode: "Always", Jitter: -1},
			script:    []outcome{failed(provider.ClassServer), failed(provider.ClassServer), failed(provider.ClassServer), done("never")},
			wantClass: provider.ClassServer,
			wantSleep: []time.Duration{500 * ms, time.Second},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newFakeAdapter(t, "a", tt.script...)
			e, clock, chain := setup(t, binding{target: targetA, adapter: a, policy: tt.policy})
			_, err := e.Execute(t.Context(), chain, testRequest(), &recorder{})
			if got := classOf(err); got != tt.wantClass {
				t.Errorf("Execute() error = %v; want class %q", err, tt.wantClass)
			}
			if got := clock.Sleeps(); !slices.Equal(got, tt.wantSleep) {
				t.Errorf("slept %v; want %v", got, tt.wantSleep)
			}
			if got, want := len(a.Bodies()), len(tt.wantSleep)+1; got != want {
				t.Errorf("Stream calls = %d; want %d", got, want)
			}
		})
	}
}

// TestExecutorRetryHint: a provider hint up to Max is the delay, exactly; a
// hint beyond Max is not waited for, the chain moves on at once.
func TestExecutorRetryHint(t *testing.T) {
	tests := []struct {
		name      string
		policy    provider.RetryPolicy
		hint      time.Duration
		wantSleep []time.Duration // nil: straight to the fallback
	}{
		{"short hint", provider.RetryPolicy{}, 1100 * ms, []time.Duration{1100 * ms}},
		{"hint below the computed delay", provider.RetryPolicy{}, 10 * ms, []time.Duration{10 * ms}},
		{"hint at the cap", provider.RetryPolicy{}, 10 * time.Second, []time.Duration{10 * time.Second}},
		{"hint beyond the cap", provider.RetryPolicy{}, 10*time.Second + ms, nil},
		{"hint beyond a custom cap", provider.RetryPolicy{Max: 2 * time.Second}, 3 * time.Second, nil},
		{"hint beyond the cap in always mode", provider.RetryPolicy{Mode: provider.RetryAlways}, time.Minute, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newFakeAdapter(t, "a", hinted(provider.ClassRateLimit, tt.hint), done("from a"))
			b := newFakeAdapter(t, "b", done("from b"))
			e, clock, chain := setup(t, binding{target: targetA, adapter: a, policy: tt.policy}, binding{target: targetB, adapter: b})
			rec := &recorder{}
			rec.logSleeps(clock)
			res, err := e.Execute(t.Context(), chain, testRequest(), rec)
			if err != nil {
				t.Fatalf("Execute() error = %v; want nil", err)
			}
			if got := clock.Sleeps(); !slices.Equal(got, tt.wantSleep) {
				t.Errorf("slept %v; want %v", got, tt.wantSleep)
			}
			var want []string
			if tt.wantSleep == nil {
				want = []string{
					"request 1 pa/ma", "finish 1 pa/ma failed RATE_LIMIT", "fallback 1 pa/ma -> pb/mb RATE_LIMIT",
					"request 2 pb/mb", "finish 2 pb/mb completed stop",
				}
				if res.Target != targetB {
					t.Errorf("Execute().Target = %s; want %s", res.Target, targetB)
				}
			} else {
				key := tt.policy.Key()
				d := tt.wantSleep[0]
				want = []string{
					"request 1 pa/ma", "finish 1 pa/ma retrying RATE_LIMIT",
					fmt.Sprintf("retry 1 pa/ma %s RATE_LIMIT #1 %v", key, d), fmt.Sprintf("sleep %v", d),
					fmt.Sprintf("retry-started 1 pa/ma %s #1 %v", key, d),
					"request 2 pa/ma", "finish 2 pa/ma completed stop",
				}
				if res.Target != targetA {
					t.Errorf("Execute().Target = %s; want %s", res.Target, targetA)
				}
			}
			if got := rec.trace(); !slices.Equal(got, want) {
				t.Errorf("events = %q; want %q", got, want)
			}
		})
	}
}

// TestExecutorRetryEventOrder: request, finish(retrying), retry (before the
// wait), the wait, retry-started (after it), request, ...
func TestExecutorRetryEventOrder(t *testing.T) {
	a := newFakeAdapter(t, "a", failed(provider.ClassServer), failed(provider.ClassRateLimit), done("x"))
	e, clock, chain := setup(t, binding{target: targetA, adapter: a, policy: noJitter})
	rec := &recorder{}
	rec.logSleeps(clock)
	if _, err := e.Execute(t.Context(), chain, testRequest(), rec); err != nil {
		t.Fatalf("Execute() error = %v; want nil", err)
	}
	want := []string{
		"request 1 pa/ma",
		"finish 1 pa/ma retrying SERVER",
		"retry 1 pa/ma normal SERVER #1 500ms",
		"sleep 500ms",
		"retry-started 1 pa/ma normal #1 500ms",
		"request 2 pa/ma",
		"finish 2 pa/ma retrying RATE_LIMIT",
		"retry 2 pa/ma normal RATE_LIMIT #2 1s",
		"sleep 1s",
		"retry-started 2 pa/ma normal #2 1s",
		"request 3 pa/ma",
		"finish 3 pa/ma completed stop",
	}
	if got := rec.trace(); !slices.Equal(got, want) {
		t.Errorf("events = %q; want %q", got, want)
	}
}

// TestExecutorRetryCancelledDuringWait: cancelling during the wait ends the
// execution CANCELLED, with no further attempt and no fallback.
func TestExecutorRetryCancelledDuringWait(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	a := newFakeAdapter(t, "a", failed(provider.ClassServer), done("never"))
	b := newFakeAdapter(t, "b", done("never"))
	e, clock, chain := setup(t, binding{target: targetA, adapter: a, policy: noJitter}, binding{target: targetB, adapter: b})
	clock.onSleep = func(time.Duration) { cancel() }
	rec := &recorder{}
	res, err := e.Execute(ctx, chain, testRequest(), rec)
	if classOf(err) != provider.ClassCancelled {
		t.Fatalf("Execute() error = %v; want CANCELLED", err)
	}
	if len(a.Bodies()) != 1 || len(b.Bodies()) != 0 || b.Prepares() != 0 {
		t.Errorf("Stream calls = %d, %d (b prepared %d); want 1, 0 (0)", len(a.Bodies()), len(b.Bodies()), b.Prepares())
	}
	want := []string{"request 1 pa/ma", "finish 1 pa/ma retrying SERVER", "retry 1 pa/ma normal SERVER #1 500ms"}
	if got := rec.trace(); !slices.Equal(got, want) {
		t.Errorf("events = %q; want %q", got, want)
	}
	if len(res.Attempts) != 1 || res.Attempts[0].Class != provider.ClassServer {
		t.Errorf("Attempts = %+v; want the one SERVER attempt", res.Attempts)
	}
}

// TestExecutorRetrySameBody: every retry sends the bytes of the first
// attempt, prepared once (LLM-RETRY-WIRE-TEST); the fallback sends its own.
func TestExecutorRetrySameBody(t *testing.T) {
	a := newFakeAdapter(t, "a", failed(provider.ClassTransport), failed(provider.ClassRateLimit), failed(provider.ClassEmpty))
	b := newFakeAdapter(t, "b", failed(provider.ClassServer), done("x"))
	e, _, chain := setup(t, binding{target: targetA, adapter: a}, binding{target: targetB, adapter: b})
	if _, err := e.Execute(t.Context(), chain, testRequest(), &recorder{}); err != nil {
		t.Fatalf("Execute() error = %v; want nil", err)
	}
	for _, x := range []struct {
		a       *fakeAdapter
		target  provider.Target
		streams int
	}{{a, targetA, 3}, {b, targetB, 2}} {
		if x.a.Prepares() != 1 {
			t.Errorf("Prepare(%s) calls = %d; want 1", x.target, x.a.Prepares())
		}
		bodies := x.a.Bodies()
		if len(bodies) != x.streams {
			t.Fatalf("Stream(%s) calls = %d; want %d", x.target, len(bodies), x.streams)
		}
		want := wantBody(t, x.a.name, x.target.Model, testRequest())
		for i, body := range bodies {
			if !bytes.Equal(body, want) {
				t.Errorf("body of attempt %d on %s = %s; want %s", i+1, x.target, body, want)
			}
		}
	}
}

// TestExecutorAttempts: the result records every attempt's target, number,
// class, status, request id and duration.
func TestExecutorAttempts(t *testing.T) {
	took := func(o outcome, d time.Duration) outcome { o.took = d; return o }
	a := newFakeAdapter(t, "a",
		took(failed(provider.ClassServer), 100*ms),
		took(hinted(provider.ClassRateLimit, 300*ms), 250*ms),
		took(failed(provider.ClassTimeout), 50*ms))
	b := newFakeAdapter(t, "b", took(done("x"), 300*ms))
	e, _, chain := setup(t, binding{target: targetA, adapter: a, policy: noJitter}, binding{target: targetB, adapter: b})
	rec := &recorder{}
	res, err := e.Execute(t.Context(), chain, testRequest(), rec)
	if err != nil {
		t.Fatalf("Execute() error = %v; want nil", err)
	}
	want := []provider.Attempt{
		{Number: 1, Target: targetA, Class: provider.ClassServer, Status: 500, RequestID: "req_SERVER", Duration: 100 * ms},
		{Number: 2, Target: targetA, Class: provider.ClassRateLimit, Status: 429, Duration: 250 * ms},
		{Number: 3, Target: targetA, Class: provider.ClassTimeout, Status: 500, RequestID: "req_TIMEOUT", Duration: 50 * ms},
		{Number: 4, Target: targetB, Duration: 300 * ms},
	}
	if !slices.Equal(res.Attempts, want) {
		t.Errorf("Attempts = %+v; want %+v", res.Attempts, want)
	}
	var durations []time.Duration
	for _, ev := range rec.kinds(provider.EventFinish) {
		durations = append(durations, ev.Duration)
	}
	if want := []time.Duration{100 * ms, 250 * ms, 50 * ms, 300 * ms}; !slices.Equal(durations, want) {
		t.Errorf("EventFinish durations = %v; want %v", durations, want)
	}
}

package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/scripted"
)

func TestExecutorSuccessFirstTry(t *testing.T) {
	first := done("hello")
	first.frames = []string{"f1", "f2"}
	a := newFakeAdapter(t, "a", first)
	e, clock, chain := setup(t, binding{target: targetA, adapter: a})
	rec := &recorder{}
	res, err := e.Execute(t.Context(), chain, testRequest(), rec)
	if err != nil {
		t.Fatalf("Execute() error = %v; want nil", err)
	}
	if res.Response.Text != "hello" || res.Target != targetA || res.API != scripted.API.Name {
		t.Errorf("Execute() = %q from %s (%s); want %q from %s (%s)", res.Response.Text, res.Target, res.API, "hello", targetA, scripted.API.Name)
	}
	if want := []provider.Attempt{{Number: 1, Target: targetA}}; !slices.Equal(res.Attempts, want) {
		t.Errorf("Attempts = %+v; want %+v", res.Attempts, want)
	}
	if want := []string{"request 1 pa/ma", "finish 1 pa/ma completed stop"}; !slices.Equal(rec.trace(), want) {
		t.Errorf("events = %q; want %q", rec.trace(), want)
	}
	if want := []string{"1 pa/ma f1", "1 pa/ma f2"}; !slices.Equal(rec.frames, want) {
		t.Errorf("frames = %q; want %q", rec.frames, want)
	}
	if got := clock.Sleeps(); len(got) != 0 {
		t.Errorf("slept %v; want no sleep", got)
	}
	if a.Prepares() != 1 || len(res.Skipped) != 0 {
		t.Errorf("Prepare calls = %d, skipped %+v; want 1, none", a.Prepares(), res.Skipped)
	}
}

func TestExecutorFallback(t *testing.T) {
	tests := []struct {
		name      string
		a, b, c   []outcome // nil c: a two-target chain
		wantText  string    // "" with wantClass: no response
		wantFrom  provider.Target
		wantClass provider.Class
		wantTrace []string
	}{
		{
			name: "non-retryable failure moves on at once",
			a:    []outcome{failed(provider.ClassAuth)}, b: []outcome{done("from b")},
			wantText: "from b", wantFrom: targetB,
			wantTrace: []string{
				"request 1 pa/ma", "finish 1 pa/ma failed AUTH", "fallback 1 pa/ma -> pb/mb AUTH",
				"request 2 pb/mb", "finish 2 pb/mb completed stop",
			},
		},
		{
			name: "all targets fail: the last failure",
			a:    []outcome{failed(provider.ClassAuth)}, b: []outcome{failed(provider.ClassQuota)}, c: []outcome{failed(provider.ClassInvalidRequest)},
			wantClass: provider.ClassInvalidRequest,
			wantTrace: []string{
				"request 1 pa/ma", "finish 1 pa/ma failed AUTH", "fallback 1 pa/ma -> pb/mb AUTH",
				"request 2 pb/mb", "finish 2 pb/mb failed QUOTA", "fallback 2 pb/mb -> pc/mc QUOTA",
				"request 3 pc/mc", "finish 3 pc/mc failed INVALID_REQUEST",
			},
		},
		{
			name: "incomplete moves to the next target",
			a:    []outcome{incomplete("partial a")}, b: []outcome{done("from b")},
			wantText: "from b", wantFrom: targetB,
			wantTrace: []string{
				"request 1 pa/ma", "finish 1 pa/ma failed INCOMPLETE_RESPONSE", "fallback 1 pa/ma -> pb/mb INCOMPLETE_RESPONSE",
				"request 2 pb/mb", "finish 2 pb/mb completed stop",
			},
		},
		{
			name: "incomplete on the last target is returned beside its failure",
			a:    []outcome{failed(provider.ClassAuth)}, b: []outcome{incomplete("partial b")},
			wantText: "partial b", wantFrom: targetB, wantClass: provider.ClassIncomplete,
			wantTrace: []string{
				"request 1 pa/ma", "finish 1 pa/ma failed AUTH", "fallback 1 pa/ma -> pb/mb AUTH",
				"request 2 pb/mb", "finish 2 pb/mb failed INCOMPLETE_RESPONSE",
			},
		},
		{
			name: "incomplete then a failure: the incomplete response beside INCOMPLETE_RESPONSE",
			a:    []outcome{incomplete("partial a")}, b: []outcome{failed(provider.ClassAuth)},
			wantText: "partial a", wantFrom: targetA, wantClass: provider.ClassIncomplete,
			wantTrace: []string{
				"request 1 pa/ma", "finish 1 pa/ma failed INCOMPLETE_RESPONSE", "fallback 1 pa/ma -> pb/mb INCOMPLETE_RESPONSE",
				"request 2 pb/mb", "finish 2 pb/mb failed AUTH",
			},
		},
		{
			name: "two incompletes: the later one",
			a:    []outcome{incomplete("partial a")}, b: []outcome{incomplete("partial b")},
			wantText: "partial b", wantFrom: targetB, wantClass: provider.ClassIncomplete,
			wantTrace: []string{
				"request 1 pa/ma", "finish 1 pa/ma failed INCOMPLETE_RESPONSE", "fallback 1 pa/ma -> pb/mb INCOMPLETE_RESPONSE",
				"request 2 pb/mb", "finish 2 pb/mb failed INCOMPLETE_RESPONSE",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bs := []binding{
				{target: targetA, adapter: newFakeAdapter(t, "a", tt.a...), policy: noJitter},
				{target: targetB, adapter: newFakeAdapter(t, "b", tt.b...), policy: noJitter},
			}
			if tt.c != nil {
				bs = append(bs, binding{target: targetC, adapter: newFakeAdapter(t, "c", tt.c...), policy: noJitter})
			}
			e, clock, chain := setup(t, bs...)
			rec := &recorder{}
			res, err := e.Execute(t.Context(), chain, testRequest(), rec)
			if got := classOf(err); got != tt.wantClass {
				t.Errorf("Execute() error = %v; want class %q", err, tt.wantClass)
			}
			if err != nil {
				var f *provider.Failure
				if !errors.As(err, &f) {
					t.Errorf("Execute() error = %T; want a *provider.Failure", err)
				}
			}
			switch {
			case tt.wantText == "" && res.Response != nil:
				t.Errorf("Execute().Response = %+v; want nil", res.Response)
			case tt.wantText != "" && (res.Response == nil || res.Response.Text != tt.wantText || res.Target != tt.wantFrom):
				t.Errorf("Execute() = %+v from %s; want %q from %s", res.Response, res.Target, tt.wantText, tt.wantFrom)
			}
			if got := rec.trace(); !slices.Equal(got, tt.wantTrace) {
				t.Errorf("events = %q; want %q", got, tt.wantTrace)
			}
			if got := clock.Sleeps(); len(got) != 0 {
				t.Errorf("slept %v; want none before a fallback", got)
			}
			for _, b := range bs {
				if n := b.adapter.Prepares(); n > 1 {
					t.Errorf("Prepare(%s) calls = %d; want at most 1", b.target, n)
				}
				for i, body := range b.adapter.Bodies() {
					if want := wantBody(t, b.adapter.name, b.target.Model, testRequest()); string(body) != string(want) {
						t.Errorf("body %d sent to %s = %s; want its own Prepare output %s", i, b.target, body, want)
					}
				}
			}
		})
	}
}

func TestExecutorSkippedLastTarget(t *testing.T) {
	a := newFakeAdapter(t, "a", failed(provider.ClassAuth))
	e, _, chain := setup(t, binding{target: targetA, adapter: a}, binding{target: targetB}) // B unregistered
	rec := &recorder{}
	res, err := e.Execute(t.Context(), chain, testRequest(), rec)
	var f *provider.Failure
	if !errors.As(err, &f) || f.Class != provider.ClassNoRoute || f.Reason != provider.SkipUnknown {
		t.Errorf("Execute() error = %v; want the skip of the last target, %s/%s", err, provider.ClassNoRoute, provider.SkipUnknown)
	}
	if want := []provider.Skip{{Target: targetB, Reason: provider.SkipUnknown}}; !slices.Equal(res.Skipped, want) {
		t.Errorf("Result.Skipped = %+v; want %+v", res.Skipped, want)
	}
	want := []string{"request 1 pa/ma", "finish 1 pa/ma failed AUTH", "fallback 1 pa/ma -> pb/mb AUTH"}
	if got := rec.trace(); !slices.Equal(got, want) {
		t.Errorf("events = %q; want %q", got, want)
	}
}

func TestExecutorNoRoute(t *testing.T) {
	tests := []struct {
		name  string
		e     *provider.Executor
		chain []provider.Target
	}{
		{"no targets", &provider.Executor{Registry: provider.NewRegistry(), Clock: newFakeClock()}, nil},
		{"no registry", &provider.Executor{Clock: newFakeClock()}, []provider.Target{targetA}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := tt.e.Execute(t.Context(), tt.chain, testRequest(), &recorder{})
			var f *provider.Failure
			if !errors.As(err, &f) || f.Class != provider.ClassNoRoute {
				t.Errorf("Execute(%v) error = %v; want %s", tt.chain, err, provider.ClassNoRoute)
			}
			if res == nil || res.Response != nil {
				t.Errorf("Execute(%v) result = %+v; want an empty result", tt.chain, res)
			}
		})
	}
}

// TestExecutorRelayError: an observer that cannot take a frame stops the
// execution with ErrRelay: not retried (even in always mode), no fallback.
func TestExecutorRelayError(t *testing.T) {
	first := done("x")
	first.frames = []string{"f1", "f2"}
	a := newFakeAdapter(t, "a", first, done("never"))
	b := newFakeAdapter(t, "b", done("never"))
	e, clock, chain := setup(t,
		binding{target: targetA, adapter: a, policy: provider.RetryPolicy{Mode: provider.RetryAlways}},
		binding{target: targetB, adapter: b})
	relayDown := errors.New("relay down")
	rec := &recorder{frameErr: relayDown}
	res, err := e.Execute(t.Context(), chain, testRequest(), rec)
	if !errors.Is(err, provider.ErrRelay) || !errors.Is(err, relayDown) {
		t.Fatalf("Execute() error = %v; want it to wrap ErrRelay and the observer's error", err)
	}
	if res.Response != nil {
		t.Errorf("Execute().Response = %+v; want nil", res.Response)
	}
	if got := len(a.Bodies()); got != 1 {
		t.Errorf("Stream calls = %d; want 1 (no retry)", got)
	}
	if got := len(b.Bodies()) + b.Prepares(); got != 0 {
		t.Errorf("fallback used %d times; want 0", got)
	}
	if want := []string{"1 pa/ma f1"}; !slices.Equal(rec.frames, want) {
		t.Errorf("frames = %q; want %q (the stream stops at the first refused frame)", rec.frames, want)
	}
	if n := len(rec.kinds(provider.EventRetry)) + len(rec.kinds(provider.EventFallback)); n != 0 {
		t.Errorf("events = %q; want no retry and no fallback", rec.trace())
	}
	if got := clock.Sleeps(); len(got) != 0 {
		t.Errorf("slept %v; want none", got)
	}
}

// TestExecutorFailureBoundary: every failure of selection, dispatch or
// streaming ends as one *Failure whose snapshot carries only class, HTTP
// status, provider delay, request id and reason: never a body or a header.
func TestExecutorFailureBoundary(t *testing.T) {
	const secret = "sk-live-SECRET prompt text"
	full := provider.Fail(provider.ClassRateLimit, "scripted", errors.New(secret))
	full.Status, full.RetryAfter, full.RequestID = 429, time.Minute, "req_123"
	tests := []struct {
		name     string
		bindings func(t *testing.T) []binding
		ctx      func(t *testing.T) context.Context
		want     provider.Class
		wantKeys []string
	}{
		{
			name: "http failure with every field",
			bindings: func(t *testing.T) []binding {
				return []binding{{target: targetA, adapter: newFakeAdapter(t, "a", outcome{err: full})}}
			},
			want:     provider.ClassRateLimit,
			wantKeys: []string{"class", "http_status", "provider_delay_ms", "reason", "request_id"},
		},
		{
			name: "unclassified adapter error carrying a body",
			bindings: func(t *testing.T) []binding {
				return []binding{{target: targetA, adapter: newFakeAdapter(t, "a", outcome{err: errors.New(secret)}), policy: provider.RetryPolicy{Mode: provider.RetryNever}}}
			},
			want:     provider.ClassTransport,
			wantKeys: []string{"class", "reason"},
		},
		{
			name: "prepare failure carrying a body",
			bindings: func(t *testing.T) []binding {
				a := newFakeAdapter(t, "a")
				a.prepareErr = errors.New(secret)
				return []binding{{target: targetA, adapter: a}}
			},
			want:     provider.ClassInvalidRequest,
			wantKeys: []string{"class", "reason"},
		},
		{
			name:     "selection: unknown provider",
			bindings: func(*testing.T) []binding { return []binding{{target: targetA}} },
			want:     provider.ClassNoRoute,
			wantKeys: []string{"class", "reason"},
		},
		{
			name: "cancelled before dispatch",
			bindings: func(t *testing.T) []binding {
				return []binding{{target: targetA, adapter: newFakeAdapter(t, "a", outcome{err: errors.New(secret)})}}
			},
			ctx: func(t *testing.T) context.Context {
				ctx, cancel := context.WithCancel(t.Context())
				cancel()
				return ctx
			},
			want:     provider.ClassCancelled,
			wantKeys: []string{"class", "reason"},
		},
	}
	allowed := map[string]bool{"class": true, "http_status": true, "provider_delay_ms": true, "request_id": true, "reason": true}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _, chain := setup(t, tt.bindings(t)...)
			ctx := t.Context()
			if tt.ctx != nil {
				ctx = tt.ctx(t)
			}
			_, err := e.Execute(ctx, chain, testRequest(), &recorder{})
			var f *provider.Failure
			if !errors.As(err, &f) || f.Class != tt.want {
				t.Fatalf("Execute() error = %v; want a *provider.Failure of class %s", err, tt.want)
			}
			raw, jerr := json.Marshal(f.Snapshot())
			if jerr != nil {
				t.Fatalf("json.Marshal(Snapshot()) error = %v", jerr)
			}
			var m map[string]any
			if jerr := json.Unmarshal(raw, &m); jerr != nil {
				t.Fatalf("json.Unmarshal(%s) error = %v", raw, jerr)
			}
			keys := slices.Sorted(maps.Keys(m))
			for _, k := range keys {
				if !allowed[k] {
					t.Errorf("Snapshot() key %q in %s; want only class, http_status, provider_delay_ms, request_id, reason", k, raw)
				}
			}
			if !slices.Equal(keys, tt.wantKeys) {
				t.Errorf("Snapshot() keys = %q; want %q", keys, tt.wantKeys)
			}
			if strings.Contains(string(raw), "SECRET") || strings.Contains(f.Error(), "SECRET") {
				t.Errorf("Snapshot() = %s, Error() = %q; want no body content", raw, f.Error())
			}
			if m["class"] != string(tt.want) {
				t.Errorf("Snapshot().class = %v; want %s", m["class"], tt.want)
			}
		})
	}
	t.Run("snapshot values", func(t *testing.T) {
		got := full.Snapshot()
		want := provider.Snapshot{Class: provider.ClassRateLimit, HTTPStatus: 429, RetryAfterMS: 60000, RequestID: "req_123", Reason: "scripted"}
		if got != want {
			t.Errorf("Snapshot() = %+v; want %+v", got, want)
		}
	})
}

func TestExecutorCancellation(t *testing.T) {
	t.Run("during a stream", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		first := outcome{err: provider.Fail(provider.ClassTransport, "reset", nil), do: func([]byte) { cancel() }}
		a := newFakeAdapter(t, "a", first, done("never"))
		b := newFakeAdapter(t, "b", done("never"))
		e, clock, chain := setup(t, binding{target: targetA, adapter: a}, binding{target: targetB, adapter: b})
		rec := &recorder{}
		_, err := e.Execute(ctx, chain, testRequest(), rec)
		if classOf(err) != provider.ClassCancelled {
			t.Fatalf("Execute() error = %v; want CANCELLED", err)
		}
		if len(a.Bodies()) != 1 || len(b.Bodies()) != 0 || b.Prepares() != 0 {
			t.Errorf("Stream calls = %d, %d (b prepared %d); want 1, 0 (0)", len(a.Bodies()), len(b.Bodies()), b.Prepares())
		}
		if got := clock.Sleeps(); len(got) != 0 {
			t.Errorf("slept %v; want none", got)
		}
		if want := []string{"request 1 pa/ma", "finish 1 pa/ma failed CANCELLED"}; !slices.Equal(rec.trace(), want) {
			t.Errorf("events = %q; want %q", rec.trace(), want)
		}
	})
	t.Run("adapter reports cancellation in always mode", func(t *testing.T) {
		a := newFakeAdapter(t, "a", outcome{err: provider.AsFailure(context.Canceled)}, done("never"))
		b := newFakeAdapter(t, "b", done("never"))
		e, _, chain := setup(t,
			binding{target: targetA, adapter: a, policy: provider.RetryPolicy{Mode: provider.RetryAlways}},
			binding{target: targetB, adapter: b})
		_, err := e.Execute(t.Context(), chain, testRequest(), &recorder{})
		if classOf(err) != provider.ClassCancelled {
			t.Fatalf("Execute() error = %v; want CANCELLED", err)
		}
		if len(a.Bodies()) != 1 || len(b.Bodies()) != 0 {
			t.Errorf("Stream calls = %d, %d; want 1, 0", len(a.Bodies()), len(b.Bodies()))
		}
	})
	t.Run("a spent deadline sends nothing", func(t *testing.T) {
		ctx, cancel := context.WithDeadline(t.Context(), time.Unix(0, 0)) // already past
		defer cancel()
		a := newFakeAdapter(t, "a", done("never"))
		b := newFakeAdapter(t, "b", done("never"))
		e, _, chain := setup(t, binding{target: targetA, adapter: a}, binding{target: targetB, adapter: b})
		_, err := e.Execute(ctx, chain, testRequest(), &recorder{})
		if classOf(err) != provider.ClassTimeout {
			t.Fatalf("Execute() error = %v; want TIMEOUT", err)
		}
		if len(a.Bodies()) != 0 || len(b.Bodies()) != 0 {
			t.Errorf("Stream calls = %d, %d; want 0, 0", len(a.Bodies()), len(b.Bodies()))
		}
	})
	t.Run("deadline during a stream is not retried", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(t.Context())
		defer cancel(nil)
		deadline, stop := context.WithDeadline(ctx, time.Now().Add(time.Hour))
		defer stop()
		a := newFakeAdapter(t, "a", outcome{err: provider.AsFailure(context.DeadlineExceeded), do: func([]byte) { stop() }}, done("never"))
		b := newFakeAdapter(t, "b", done("never"))
		e, _, chain := setup(t, binding{target: targetA, adapter: a}, binding{target: targetB, adapter: b})
		_, err := e.Execute(deadline, chain, testRequest(), &recorder{})
		if classOf(err) != provider.ClassCancelled && classOf(err) != provider.ClassTimeout {
			t.Fatalf("Execute() error = %v; want CANCELLED or TIMEOUT", err)
		}
		if len(a.Bodies()) != 1 || len(b.Bodies()) != 0 {
			t.Errorf("Stream calls = %d, %d; want 1, 0", len(a.Bodies()), len(b.Bodies()))
		}
	})
}

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

package provider_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaichat"
	"github.com/turnstream/turnstream/internal/provider/scripted"
	"github.com/turnstream/turnstream/pkg/wire"
)

// dispatch runs pc once on e and returns its result and error.
func dispatch(t *testing.T, e *provider.Executor, pc *provider.PreparedCall, obs provider.Observer) (*provider.Result, error) {
	t.Helper()
	res := &provider.Result{}
	attempt := 0
	_, err := e.Dispatch(t.Context(), pc, &attempt, res, obs)
	return res, err
}

// TestPreparedCallPinned: a call prepared before a Replace is served by the
// old adapter with the old retry policy; a fresh Prepare sees the new
// registration (LLM-PREPARED-PIN-TEST, LLM-PI-STREAM).
func TestPreparedCallPinned(t *testing.T) {
	clock := newFakeClock()
	r := provider.NewRegistry()
	e := &provider.Executor{Registry: r, Clock: clock}
	oldPolicy := provider.RetryPolicy{Mode: provider.RetryNormal, MaxRetries: 3, Initial: 100 * time.Millisecond, Jitter: -1}
	newPolicy := provider.RetryPolicy{Mode: provider.RetryNever}
	oldA := newFakeAdapter(t, "old", failed(provider.ClassServer), failed(provider.ClassServer), done("old"))
	newA := newFakeAdapter(t, "new", failed(provider.ClassServer))

	h := mustRegister(t, r, registration(targetA, oldA, oldPolicy))
	pc, err := r.Prepare(targetA, testRequest())
	if err != nil {
		t.Fatalf("Prepare(%s) error = %v; want nil", targetA, err)
	}
	next := registration(targetA, newA, newPolicy)
	next.Metadata.API = openaichat.API.Name
	if _, err := r.Replace(h, next); err != nil {
		t.Fatalf("Replace() error = %v; want nil", err)
	}

	if got := pc.Retry(); got.Mode != provider.RetryNormal || got.MaxRetries != 3 || got.Initial != 100*time.Millisecond {
		t.Errorf("old PreparedCall.Retry() = %+v; want the old policy %+v", got, oldPolicy)
	}
	if got := pc.API(); got != scripted.API.Name {
		t.Errorf("old PreparedCall.API() = %q; want %q", got, scripted.API.Name)
	}
	if _, err := dispatch(t, e, pc, &recorder{}); err != nil {
		t.Fatalf("Dispatch(old call) error = %v; want nil", err)
	}
	if got := len(oldA.Bodies()); got != 3 {
		t.Errorf("old adapter Stream calls = %d; want 3 (two retries under the old policy)", got)
	}
	if got := len(newA.Bodies()); got != 0 {
		t.Errorf("new adapter Stream calls = %d; want 0 for a call prepared before Replace", got)
	}
	if got, want := clock.Sleeps(), []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}; !slices.Equal(got, want) {
		t.Errorf("old call slept %v; want %v (old policy)", got, want)
	}

	fresh, err := r.Prepare(targetA, testRequest())
	if err != nil {
		t.Fatalf("Prepare(%s) after Replace error = %v; want nil", targetA, err)
	}
	if got := fresh.Retry().Mode; got != provider.RetryNever {
		t.Errorf("fresh PreparedCall.Retry().Mode = %q; want %q", got, provider.RetryNever)
	}
	if got := fresh.API(); got != openaichat.API.Name {
		t.Errorf("fresh PreparedCall.API() = %q; want %q", got, openaichat.API.Name)
	}
	_, err = dispatch(t, e, fresh, &recorder{})
	if classOf(err) != provider.ClassServer {
		t.Errorf("Dispatch(fresh call) error = %v; want SERVER without retry", err)
	}
	if got := len(newA.Bodies()); got != 1 {
		t.Errorf("new adapter Stream calls = %d; want 1 (never mode)", got)
	}
	if got := len(oldA.Bodies()); got != 3 {
		t.Errorf("old adapter Stream calls = %d after the fresh call; want still 3", got)
	}
	if !bytes.Contains(fresh.Body(), []byte(`"adapter":"new"`)) || !bytes.Contains(pc.Body(), []byte(`"adapter":"old"`)) {
		t.Errorf("bodies = %s, %s; want the old call's built by the old adapter and the fresh one's by the new", pc.Body(), fresh.Body())
	}
}

func TestPreparedCallCaptures(t *testing.T) {
	r := provider.NewRegistry()
	x := registration(targetA, newFakeAdapter(t, "a"), provider.RetryPolicy{})
	mustRegister(t, r, x)
	pc, err := r.Prepare(targetA, testRequest())
	if err != nil {
		t.Fatalf("Prepare(%s) error = %v; want nil", targetA, err)
	}
	if got := pc.Target(); got != targetA {
		t.Errorf("Target() = %s; want %s", got, targetA)
	}
	if got := pc.Model(); got.Name != targetA.Model || got.ContextTokens != 1000 || !got.Capabilities.Tools {
		t.Errorf("Model() = %+v; want %s with its context and capabilities", got, targetA.Model)
	}
	if got := pc.Retry(); got != provider.DefaultRetryPolicy {
		t.Errorf("Retry() = %+v; want the defaults %+v", got, provider.DefaultRetryPolicy)
	}
}

func TestPreparedCallDispatchOnce(t *testing.T) {
	a := newFakeAdapter(t, "a", done("one"), done("two"))
	e, _, _ := setup(t, binding{target: targetA, adapter: a})
	pc, err := e.Registry.Prepare(targetA, testRequest())
	if err != nil {
		t.Fatalf("Prepare(%s) error = %v; want nil", targetA, err)
	}
	if _, err := dispatch(t, e, pc, &recorder{}); err != nil {
		t.Fatalf("first Dispatch() error = %v; want nil", err)
	}
	rec := &recorder{}
	res, err := dispatch(t, e, pc, rec)
	var f *provider.Failure
	if !errors.As(err, &f) || f.Class != provider.ClassInvalidCall {
		t.Errorf("second Dispatch() error = %v; want %s", err, provider.ClassInvalidCall)
	}
	if got := len(a.Bodies()); got != 1 {
		t.Errorf("Stream calls = %d; want 1", got)
	}
	if len(res.Attempts) != 0 || len(rec.events) != 0 {
		t.Errorf("second Dispatch() attempts %+v, events %q; want none", res.Attempts, rec.trace())
	}
}

// TestPreparedCallBodyFrozen: neither the caller's Request after Prepare
// nor a mutated copy from Body() changes what is sent.
func TestPreparedCallBodyFrozen(t *testing.T) {
	req := testRequest()
	want := wantBody(t, "a", targetA.Model, req)
	a := newFakeAdapter(t, "a", done("x"))
	e, _, _ := setup(t, binding{target: targetA, adapter: a})
	pc, err := e.Registry.Prepare(targetA, req)
	if err != nil {
		t.Fatalf("Prepare(%s) error = %v; want nil", targetA, err)
	}

	req.System = "changed"
	req.Messages[0].Content = "changed"
	req.Messages = append(req.Messages, provider.Message{Role: wire.RoleUser, Content: "more"})
	req.Tools = append(req.Tools, wire.Tool{Name: "added"})
	b := pc.Body()
	for i := range b {
		b[i] = 'X'
	}

	if got := pc.Body(); !bytes.Equal(got, want) {
		t.Errorf("Body() = %s; want %s", got, want)
	}
	if _, err := dispatch(t, e, pc, &recorder{}); err != nil {
		t.Fatalf("Dispatch() error = %v; want nil", err)
	}
	if got := a.Bodies(); len(got) != 1 || !bytes.Equal(got[0], want) {
		t.Errorf("adapter received %q; want %s", got, want)
	}
}

// TestPreparedCallBodyMutatedInPlace: an adapter that changes the body it
// was given makes the next attempt INVALID_PREPARED_CALL, which is neither
// sent, retried nor a reason to fall back.
func TestPreparedCallBodyMutatedInPlace(t *testing.T) {
	corrupt := failed(provider.ClassServer)
	corrupt.do = func(body []byte) { body[0] ^= 0xff }
	a := newFakeAdapter(t, "a", corrupt, done("never"))
	b := newFakeAdapter(t, "b", done("never"))
	e, _, chain := setup(t, binding{target: targetA, adapter: a, policy: noJitter}, binding{target: targetB, adapter: b})
	rec := &recorder{}
	res, err := e.Execute(t.Context(), chain, testRequest(), rec)
	if classOf(err) != provider.ClassInvalidCall {
		t.Fatalf("Execute() error = %v; want %s", err, provider.ClassInvalidCall)
	}
	if got := len(a.Bodies()); got != 1 {
		t.Errorf("Stream calls of the mutating adapter = %d; want 1", got)
	}
	if got := len(b.Bodies()) + b.Prepares(); got != 0 {
		t.Errorf("fallback adapter used %d times; want 0", got)
	}
	wantTrace := []string{
		"request 1 pa/ma",
		"finish 1 pa/ma retrying SERVER",
		"retry 1 pa/ma normal SERVER #1 500ms",
		"retry-started 1 pa/ma normal #1 500ms",
		"request 2 pa/ma",
		"finish 2 pa/ma failed INVALID_PREPARED_CALL",
	}
	if got := rec.trace(); !slices.Equal(got, wantTrace) {
		t.Errorf("events = %q; want %q", got, wantTrace)
	}
	if n := len(res.Attempts); n != 2 || res.Attempts[1].Class != provider.ClassInvalidCall {
		t.Errorf("Attempts = %+v; want the second INVALID_PREPARED_CALL", res.Attempts)
	}
}

// TestPrepareSkips: a target that cannot serve the request is skipped with
// its reason, and the chain falls back to the next.
func TestPrepareSkips(t *testing.T) {
	withTools := func() *provider.Request {
		req := testRequest()
		req.Tools = []wire.Tool{{Name: "lookup"}}
		return req
	}
	tests := []struct {
		name       string
		req        func() *provider.Request
		regA       func(a *fakeAdapter) *provider.Registration // nil: A is not registered
		wantClass  provider.Class
		wantReason string
		wantErr    error
	}{
		{
			name: "tools on a model without tools",
			req:  withTools,
			regA: func(a *fakeAdapter) *provider.Registration {
				x := registration(targetA, a, provider.RetryPolicy{})
				x.Metadata.Models[0].Capabilities.Tools = false
				return &x
			},
			wantClass: provider.ClassUnsupported, wantReason: provider.SkipNoTools,
		},
		{
			name: "model without text",
			req:  testRequest,
			regA: func(a *fakeAdapter) *provider.Registration {
				x := registration(targetA, a, provider.RetryPolicy{})
				x.Metadata.Models[0].Capabilities = provider.Capabilities{}
				return &x
			},
			wantClass: provider.ClassUnsupported, wantReason: provider.SkipNoText,
		},
		{
			name:      "unknown provider",
			req:       testRequest,
			regA:      func(*fakeAdapter) *provider.Registration { return nil },
			wantClass: provider.ClassNoRoute, wantReason: provider.SkipUnknown, wantErr: provider.ErrUnknownProvider,
		},
		{
			name: "unknown model",
			req:  testRequest,
			regA: func(a *fakeAdapter) *provider.Registration {
				x := registration(targetA, a, provider.RetryPolicy{})
				x.Metadata.Models[0].Name = "other"
				return &x
			},
			wantClass: provider.ClassUnsupported, wantReason: provider.SkipUnknownModel,
		},
		{
			name: "deprecated provider",
			req:  testRequest,
			regA: func(a *fakeAdapter) *provider.Registration {
				x := registration(targetA, a, provider.RetryPolicy{})
				x.Metadata.Deprecated = true
				return &x
			},
			wantClass: provider.ClassDeprecated, wantReason: provider.SkipDeprecated, wantErr: provider.ErrDeprecatedRefusal,
		},
		{
			name: "prepare fails unclassified",
			req:  testRequest,
			regA: func(a *fakeAdapter) *provider.Registration {
				a.prepareErr = errBuild
				x := registration(targetA, a, provider.RetryPolicy{})
				return &x
			},
			wantClass: provider.ClassInvalidRequest, wantReason: provider.SkipPrepareFailed, wantErr: errBuild,
		},
		{
			name: "prepare fails classified",
			req:  testRequest,
			regA: func(a *fakeAdapter) *provider.Registration {
				a.prepareErr = provider.Fail(provider.ClassInvalidRequest, "request not serializable", errBuild)
				x := registration(targetA, a, provider.RetryPolicy{})
				return &x
			},
			wantClass: provider.ClassInvalidRequest, wantReason: provider.SkipPrepareFailed, wantErr: errBuild,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newFakeAdapter(t, "a")
			b := newFakeAdapter(t, "b", done("from b"))
			clock := newFakeClock()
			r := provider.NewRegistry()
			if x := tt.regA(a); x != nil {
				mustRegister(t, r, *x)
			}
			mustRegister(t, r, registration(targetB, b, provider.RetryPolicy{}))

			pc, err := r.Prepare(targetA, tt.req())
			var f *provider.Failure
			if pc != nil || !errors.As(err, &f) || f.Class != tt.wantClass || f.Reason != tt.wantReason {
				t.Errorf("Prepare(%s) = %v, %v; want nil and %s/%s", targetA, pc, err, tt.wantClass, tt.wantReason)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("Prepare(%s) error = %v; want it to wrap %v", targetA, err, tt.wantErr)
			}

			rec := &recorder{}
			e := &provider.Executor{Registry: r, Clock: clock}
			res, err := e.Execute(t.Context(), []provider.Target{targetA, targetB}, tt.req(), rec)
			if err != nil {
				t.Fatalf("Execute() error = %v; want nil (served by the fallback)", err)
			}
			if res.Target != targetB || res.Response.Text != "from b" {
				t.Errorf("Execute() = %q from %s; want %q from %s", res.Response.Text, res.Target, "from b", targetB)
			}
			if want := []provider.Skip{{Target: targetA, Reason: tt.wantReason}}; !slices.Equal(res.Skipped, want) {
				t.Errorf("Result.Skipped = %+v; want %+v", res.Skipped, want)
			}
			wantTrace := []string{
				"fallback 0 pa/ma -> pb/mb skipped " + tt.wantReason,
				"request 1 pb/mb",
				"finish 1 pb/mb completed stop",
			}
			if got := rec.trace(); !slices.Equal(got, wantTrace) {
				t.Errorf("events = %q; want %q", got, wantTrace)
			}
			if fb := rec.kinds(provider.EventFallback); len(fb) == 1 && (fb[0].Failure == nil || fb[0].Failure.Class != tt.wantClass) {
				t.Errorf("EventFallback.Failure = %v; want class %s", fb[0].Failure, tt.wantClass)
			}
			if got := len(a.Bodies()); got != 0 {
				t.Errorf("skipped target streamed %d times; want 0", got)
			}
			if len(res.Attempts) != 1 || res.Attempts[0].Number != 1 || res.Attempts[0].Target != targetB {
				t.Errorf("Attempts = %+v; want one, on %s", res.Attempts, targetB)
			}
		})
	}
}

var errBuild = errors.New("fake: cannot build body")

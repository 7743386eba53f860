package scripted_test

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/apis"
	"github.com/turnstream/turnstream/internal/provider/openaichat"
	"github.com/turnstream/turnstream/internal/provider/scripted"
	"github.com/turnstream/turnstream/pkg/wire"
)

// run is one execution of a turn's steps, as the turn loop would make it.
type run struct {
	log     recording
	results []*provider.Result
	errs    []error
	traces  [][]string
	clock   *fakeClock
}

// execute runs the steps on reg, step n with requests[n-1], each on chain.
func execute(t *testing.T, reg *provider.Registry, chain []provider.Target, requests []*provider.Request) *run {
	t.Helper()
	r := &run{clock: &fakeClock{}}
	ex := &provider.Executor{Registry: reg, Clock: r.clock}
	for i, req := range requests {
		rec := &recorder{step: i + 1, log: &r.log}
		res, err := ex.Execute(t.Context(), chain, req, rec)
		r.results = append(r.results, res)
		r.errs = append(r.errs, err)
		r.traces = append(r.traces, trace(rec.events))
	}
	return r
}

// trace renders executor events without durations and delays (backoff
// jitter is random): kind attempt target marker/class retry.
func trace(evs []provider.Event) []string {
	var out []string
	for _, ev := range evs {
		s := fmt.Sprintf("%s %d %s", ev.Kind, ev.Attempt, ev.Target)
		switch ev.Kind {
		case provider.EventFinish:
			s += " " + ev.Marker
			if ev.Failure != nil {
				s += " " + string(ev.Failure.Class)
			}
		case provider.EventRetry, provider.EventRetryStarted:
			s += fmt.Sprintf(" #%d", ev.Retry)
		case provider.EventFallback:
			s += " -> " + ev.Next.String()
		}
		out = append(out, s)
	}
	return out
}

// attempts renders what the executor recorded of each attempt that the
// record can carry: number, target and failure class.
func attempts(res *provider.Result) []string {
	var out []string
	for _, a := range res.Attempts {
		out = append(out, fmt.Sprintf("%d %s %s", a.Number, a.Target, a.Class))
	}
	return out
}

func registration(id string, routes []string, api string, adapter provider.Adapter, models ...string) provider.Registration {
	desc, _ := apis.Lookup(api)
	md := provider.Metadata{ID: id, API: api, Replay: desc.Replay, Capabilities: desc.Capabilities}
	for _, m := range models {
		md.Models = append(md.Models, provider.Model{Name: m, ContextTokens: 128000, Capabilities: desc.Capabilities})
	}
	return provider.Registration{ID: id, Routes: routes, Metadata: md, Adapter: adapter, Retry: provider.DefaultRetryPolicy}
}

func mustRegister(t *testing.T, reg *provider.Registry, r provider.Registration) {
	t.Helper()
	h, err := reg.Register(r)
	if err != nil {
		t.Fatalf("Register(%s) error = %v", r.ID, err)
	}
	t.Cleanup(h.Close)
}

// original runs two steps against real openaichat adapters on mockllm
// servers: step 1 fails on the primary (503, a disconnect mid-stream, 503:
// retries exhausted) and completes with parallel tool calls on the backup;
// step 2 is rate limited once on the primary, then answers.
func original(t *testing.T, primary, backup []*mockllm.Response) (*run, []*provider.Request) {
	t.Helper()
	reg := provider.NewRegistry()
	mustRegister(t, reg, registration("primary", []string{"primary"}, openaichat.API.Name, mockAdapter(t, primary...), targetA.Model))
	mustRegister(t, reg, registration("backup", []string{"backup"}, openaichat.API.Name, mockAdapter(t, backup...), targetB.Model))

	requests := []*provider.Request{testRequest()}
	r := execute(t, reg, []provider.Target{targetA, targetB}, requests)
	if r.errs[0] != nil {
		t.Fatalf("original step 1: Execute() error = %v", r.errs[0])
	}
	// Step 2 continues the conversation with the tool results.
	next := testRequest()
	var calls []wire.Call
	for _, c := range r.results[0].Response.ToolCalls {
		calls = append(calls, wire.Call{ID: c.ProviderID, Name: c.Name, Arguments: c.Arguments})
	}
	next.Messages = append(next.Messages, provider.Message{Role: wire.RoleAssistant, ToolCalls: calls})
	for _, c := range calls {
		next.Messages = append(next.Messages, provider.Message{Role: wire.RoleTool, ToolCallID: c.ID, Content: "cold"})
	}
	requests = append(requests, next)
	step2 := execute(t, reg, []provider.Target{targetA, targetB}, requests[1:])
	for i := range step2.log.frames {
		step2.log.frames[i].Step = 2
	}
	for i := range step2.log.chunks {
		step2.log.chunks[i].Step = 2
	}
	r.log = concat(r.log, step2.log)
	r.results = append(r.results, step2.results...)
	r.errs = append(r.errs, step2.errs...)
	r.traces = append(r.traces, step2.traces...)
	r.clock.sleeps += step2.clock.sleeps
	return r, requests
}

func defaultRecording() (primary, backup []*mockllm.Response) {
	text := mockllm.NewStream("m-a").Text("It is sunny in Lyon and snowing in Oslo.").Finish("stop").Usage(40, 12).Frames()
	tools := mockllm.NewStream("m-b").ToolCalls(4,
		mockllm.Call{ID: "call_lyon", Name: "weather", Arguments: `{"city":"Lyon"}`},
		mockllm.Call{ID: "call_oslo", Name: "weather", Arguments: `{"city":"Oslo"}`},
	).Finish("tool_calls").Usage(30, 9).Frames()
	primary = []*mockllm.Response{
		mockllm.Error(http.StatusServiceUnavailable, "server_error", "busy", nil),
		{Frames: text, Done: true, DisconnectAfter: 3},
		mockllm.Error(http.StatusServiceUnavailable, "server_error", "busy", nil),
		mockllm.Error(http.StatusTooManyRequests, "rate_limit_exceeded", "slow down", http.Header{"Retry-After": {"1"}}),
		{Frames: text, Done: true},
	}
	backup = []*mockllm.Response{{Frames: tools, Done: true}}
	return primary, backup
}

// rerun replays log through the executor with one scripted adapter serving
// both providers.
func rerun(t *testing.T, s *scripted.Script, requests []*provider.Request) (*run, *scripted.Adapter) {
	t.Helper()
	a := newScripted(t, s)
	reg := provider.NewRegistry()
	mustRegister(t, reg, registration("scripted", []string{"primary", "backup"}, scripted.API.Name, a, targetA.Model, targetB.Model))
	return execute(t, reg, []provider.Target{targetA, targetB}, requests), a
}

// compare checks that the re-run reproduced the original attempt by
// attempt.
func compare(t *testing.T, orig, got *run) {
	t.Helper()
	for i := range orig.results {
		step := i + 1
		if g, w := provider.AsFailure(got.errs[i]), provider.AsFailure(orig.errs[i]); (g == nil) != (w == nil) || g != nil && g.Class != w.Class {
			t.Errorf("step %d: Execute() error = %v; want %v", step, got.errs[i], orig.errs[i])
		}
		if g, w := attempts(got.results[i]), attempts(orig.results[i]); !reflect.DeepEqual(g, w) {
			t.Errorf("step %d: attempts =\n%s\nwant\n%s", step, strings.Join(g, "\n"), strings.Join(w, "\n"))
		}
		if g, w := got.results[i].Response, orig.results[i].Response; !reflect.DeepEqual(g, w) {
			t.Errorf("step %d: response = %+v; want %+v", step, g, w)
		}
		if g, w := got.results[i].Target, orig.results[i].Target; g != w {
			t.Errorf("step %d: served by %s; want %s", step, g, w)
		}
		if g, w := got.traces[i], orig.traces[i]; !reflect.DeepEqual(g, w) {
			t.Errorf("step %d: events =\n%s\nwant\n%s", step, strings.Join(g, "\n"), strings.Join(w, "\n"))
		}
	}
	if !reflect.DeepEqual(got.log, orig.log) {
		t.Errorf("re-run record differs from the original:\n%s\nwant\n%s", renderLog(got.log), renderLog(orig.log))
	}
	if got.clock.sleeps != orig.clock.sleeps {
		t.Errorf("re-run waited %d times; want %d", got.clock.sleeps, orig.clock.sleeps)
	}
}

func renderLog(log recording) string {
	var b strings.Builder
	for _, f := range log.frames {
		fmt.Fprintf(&b, "raw %d/%d/%d %s/%s %q %q\n", f.Step, f.Attempt, f.Seq, f.Provider, f.Model, f.Event, f.Bytes)
	}
	for i := range log.chunks {
		b.Write(log.chunks[i].AppendJSON(nil))
		b.WriteByte('\n')
	}
	return b.String()
}

// TestRerunThroughExecutor: a turn recorded from real provider streams,
// re-run offline through the executor, makes the same attempts with the
// same failure classes, relays the same chunks and ends with the same
// response.
func TestRerunThroughExecutor(t *testing.T) {
	primary, backup := defaultRecording()
	orig, requests := original(t, primary, backup)
	want := [][]string{
		{"1 primary/m-a SERVER", "2 primary/m-a TRANSPORT", "3 primary/m-a SERVER", "4 backup/m-b "},
		{"1 primary/m-a RATE_LIMIT", "2 primary/m-a "},
	}
	for i, w := range want {
		if g := attempts(orig.results[i]); !reflect.DeepEqual(g, w) {
			t.Fatalf("original step %d attempts = %q; want %q (the recording is not what the test means)", i+1, g, w)
		}
	}

	s := derive(t, orig.log)
	if got := len(s.Calls); got != 6 {
		t.Errorf("Derive() = %d calls; want 6, one per attempt", got)
	}
	if got, want := s.Chain(1), []provider.Target{targetA, targetB}; !reflect.DeepEqual(got, want) {
		t.Errorf("Chain(1) = %v; want %v", got, want)
	}
	got, a := rerun(t, s, requests)
	compare(t, orig, got)
	if a.Remaining() != 0 {
		t.Errorf("Remaining() = %d after the re-run; want 0", a.Remaining())
	}

	// Every retry sends the body its target's preparation built.
	prepared := a.Prepared()
	if len(prepared) != 3 {
		t.Fatalf("Prepared() = %d bodies; want 3 (primary and backup in step 1, primary in step 2)", len(prepared))
	}
	wantSent := [][]byte{prepared[0], prepared[0], prepared[0], prepared[1], prepared[2], prepared[2]}
	if sent := a.Sent(); !reflect.DeepEqual(sent, wantSent) {
		t.Errorf("Sent() = %q; want %q", sent, wantSent)
	}
	if bytes.Equal(prepared[0], prepared[2]) {
		t.Errorf("Prepared() step 1 and step 2 bodies are equal; want step 2 to carry the tool results")
	}

	// A second re-run would send exactly the same.
	_, again := rerun(t, derive(t, orig.log), requests)
	if !reflect.DeepEqual(again.Sent(), a.Sent()) {
		t.Errorf("second re-run Sent() = %q; want %q", again.Sent(), a.Sent())
	}
}

// TestRerunThrownStream: the worker died during an attempt, leaving no end
// marker; the log alone cannot be re-run, an override makes it reproduce.
func TestRerunThrownStream(t *testing.T) {
	primary, backup := defaultRecording()
	orig, requests := original(t, primary, backup)
	// Drop the end marker of step 1 attempt 2 (the disconnect).
	crashed := orig.log.clone()
	crashed.chunks = slices.DeleteFunc(crashed.chunks, func(c wire.Chunk) bool {
		return c.Step == 1 && c.Attempt == 2 && c.Marker != ""
	})
	if _, err := scripted.Derive(crashed.frames, crashed.chunks); !errors.Is(err, scripted.ErrNoMarker) || !strings.Contains(err.Error(), "step 1 attempt 2") {
		t.Fatalf("Derive() error = %v; want ErrNoMarker naming step 1 attempt 2", err)
	}
	s := derive(t, crashed, scripted.Override{Step: 1, Attempt: 2, Outcome: scripted.Fail(provider.ClassTransport)})
	got, _ := rerun(t, s, requests)
	compare(t, orig, got)
}

// TestRerunDivergenceIsVisible: the log keeps failure classes, not provider
// delay hints. A 429 whose Retry-After exceeded the policy's cap went
// straight to the fallback; the re-run retries it instead, and the
// scripted adapter refuses to serve the backup's recorded call for the
// primary, so the difference shows as an INVALID_REQUEST attempt wrapping
// ErrDiverged instead of passing silently.
func TestRerunDivergenceIsVisible(t *testing.T) {
	text := mockllm.NewStream("m-b").Text("fine").Finish("stop").Frames()
	orig, requests := original(t,
		[]*mockllm.Response{mockllm.Error(http.StatusTooManyRequests, "rate_limit_exceeded", "slow down", http.Header{"Retry-After": {"600"}})},
		[]*mockllm.Response{{Frames: mockllm.NewStream("m-b").ToolCalls(0, mockllm.Call{ID: "c", Name: "weather", Arguments: `{}`}).Finish("tool_calls").Frames(), Done: true}, {Frames: text, Done: true}},
	)
	if g, w := attempts(orig.results[0]), []string{"1 primary/m-a RATE_LIMIT", "2 backup/m-b "}; !reflect.DeepEqual(g, w) {
		t.Fatalf("original step 1 attempts = %q; want %q", g, w)
	}
	step1 := orig.log.clone()
	step1.frames = slices.DeleteFunc(step1.frames, func(f wire.RawFrame) bool { return f.Step != 1 })
	step1.chunks = slices.DeleteFunc(step1.chunks, func(c wire.Chunk) bool { return c.Step != 1 })
	s := derive(t, step1)
	got, _ := rerun(t, s, requests[:1])
	want := []string{"1 primary/m-a RATE_LIMIT", "2 primary/m-a INVALID_REQUEST", "3 backup/m-b "}
	if g := attempts(got.results[0]); !reflect.DeepEqual(g, want) {
		t.Errorf("re-run attempts = %q; want %q", g, want)
	}
}

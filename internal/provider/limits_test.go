package provider_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/apis"
	"github.com/turnstream/turnstream/internal/provider/openaichat"
	"github.com/turnstream/turnstream/internal/provider/responses"
)

// api is a wire API under test: how to build its adapter for a mock.
type api struct {
	name   string
	id     string
	stream bool
	build  func(t *testing.T, baseURL string) provider.Adapter
}

var limitAPIs = []api{
	{name: "chat", id: openaichat.API.Name, stream: true, build: func(t *testing.T, baseURL string) provider.Adapter {
		a, err := openaichat.New(openaichat.Options{BaseURL: baseURL})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}},
	{name: "responses", id: responses.API.Name, stream: true, build: func(t *testing.T, baseURL string) provider.Adapter {
		a, err := responses.New(responses.Options{BaseURL: baseURL, Stream: true})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}},
	{name: "responses-body", id: responses.API.Name, build: func(t *testing.T, baseURL string) provider.Adapter {
		a, err := responses.New(responses.Options{BaseURL: baseURL})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}},
}

// mockTarget is one registered target served by a mock over real HTTP.
type mockTarget struct {
	target provider.Target
	mock   *mockllm.Server
	srv    *httptest.Server
}

// serve registers a target of API a answering with resp (the default
// retry policy: RESPONSE_TOO_LARGE must not be retried under it).
func serve(t *testing.T, reg *provider.Registry, name string, a api, resp *mockllm.Response) *mockTarget {
	t.Helper()
	mock := mockllm.New(mockllm.Queue(resp))
	srv := httptest.NewServer(mock)
	t.Cleanup(srv.Close)
	target := provider.Target{Provider: name, Model: "m"}
	desc, _ := apis.Lookup(a.id)
	caps := desc.Capabilities
	_, err := reg.Register(provider.Registration{
		ID: name, Routes: []string{name}, Adapter: a.build(t, srv.URL+"/v1"),
		Metadata: provider.Metadata{ID: name, API: a.id, Replay: desc.Replay, Capabilities: caps,
			Models: []provider.Model{{Name: "m", ContextTokens: 128000, Capabilities: caps}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &mockTarget{target: target, mock: mock, srv: srv}
}

// requests is how many HTTP requests reached the target.
func (m *mockTarget) requests() int { return len(m.mock.Requests()) }

// written is how many bytes the target's server wrote, counted once its
// handler returned: a flood stops when the client hangs up.
func (m *mockTarget) written(t *testing.T) int64 {
	t.Helper()
	m.srv.Close() // waits for the handler
	reqs := m.mock.Requests()
	if len(reqs) == 0 {
		return 0
	}
	return reqs[0].Written()
}

func flood(kind mockllm.FloodKind, bytes int64) *mockllm.Response {
	return &mockllm.Response{Flood: &mockllm.Flood{Kind: kind, Bytes: bytes}, Done: true}
}

// escapedText is a chat stream of n control bytes in chunks of 8 KiB:
// small as text, six times larger JSON-escaped.
func escapedText(n int) *mockllm.Response {
	s := mockllm.NewStream("m")
	for ; n > 0; n -= 8 << 10 {
		s.Text(strings.Repeat("\x01", min(n, 8<<10)))
	}
	return s.Finish("stop").Response()
}

// TestExecutorResponseLimits runs hostile providers, faked at the HTTP
// boundary, through the executor: each limit crossed fails the attempt with
// RESPONSE_TOO_LARGE naming it after exactly one HTTP request, with a
// single target as the result of the execution (a classified failure, not
// a relay error) and with a fallback as a served result from the next
// target; an answer just within the limits is served.
func TestExecutorResponseLimits(t *testing.T) {
	const MiB = 1 << 20
	big := provider.Limits{MaxLineBytes: MiB, MaxEventBytes: MiB}
	tests := []struct {
		name   string
		apis   []string // default chat and responses
		resp   *mockllm.Response
		limits provider.Limits
		reason string // "" serves the answer
		// written bounds what the server wrote before the client hung up.
		written int64
		check   func(t *testing.T, res *provider.Result, rec *recorder)
	}{
		{name: "endless data line", resp: flood(mockllm.FloodLine, 64*MiB), limits: big,
			reason: provider.LimitLineBytes, written: 32 * MiB},
		{name: "data lines without a blank line", resp: &mockllm.Response{Flood: &mockllm.Flood{Kind: mockllm.FloodDataLines, Bytes: 64 * MiB, Piece: 4096}},
			limits: big, reason: provider.LimitEventBytes, written: 32 * MiB},
		{name: "huge text", resp: flood(mockllm.FloodText, 256*MiB), reason: provider.LimitTextBytes, written: 64 * MiB,
			check: func(t *testing.T, _ *provider.Result, rec *recorder) {
				if n := len(rec.frames); n > 512+2 {
					t.Errorf("frames relayed = %d; want at most the 512 KiB of text in 1 KiB deltas", n)
				}
			}},
		{name: "text at the limit", resp: flood(mockllm.FloodText, 512<<10),
			check: func(t *testing.T, res *provider.Result, _ *recorder) {
				if n := len(res.Response.Text); n != 512<<10 {
					t.Errorf("Response.Text is %d bytes; want 512 KiB", n)
				}
			}},
		// An event line is not a data line: with the line limit the
		// lower, both dialects cross it first.
		{name: "single huge frame", resp: flood(mockllm.FloodFrame, 64*MiB), limits: provider.Limits{MaxEventBytes: MiB},
			reason: provider.LimitLineBytes, written: 32 * MiB},
		{name: "a frame under the line limit", resp: flood(mockllm.FloodFrame, 200<<10)},
		{name: "huge tool arguments", resp: &mockllm.Response{Flood: &mockllm.Flood{Kind: mockllm.FloodArguments, Bytes: 64 * MiB, Piece: 8192}, Done: true},
			reason: provider.LimitArgumentBytes, written: 32 * MiB},
		{name: "arguments at the limit", resp: &mockllm.Response{Flood: &mockllm.Flood{Kind: mockllm.FloodArguments, Bytes: 256 << 10, Piece: 8192}, Done: true},
			check: func(t *testing.T, res *provider.Result, _ *recorder) {
				if c := res.Response.ToolCalls; len(c) != 1 || len(c[0].Arguments) != 256<<10 || !res.Response.Executable() {
					t.Errorf("Response.ToolCalls = %d calls; want one executable call of 256 KiB", len(c))
				}
			}},
		{name: "thousands of tool calls", resp: &mockllm.Response{Flood: &mockllm.Flood{Kind: mockllm.FloodToolCalls, Count: 5000}, Done: true},
			reason: provider.LimitToolCalls},
		{name: "128 tool calls", resp: &mockllm.Response{Flood: &mockllm.Flood{Kind: mockllm.FloodToolCalls, Count: 128}, Done: true},
			check: func(t *testing.T, res *provider.Result, _ *recorder) {
				if n := len(res.Response.ToolCalls); n != 128 {
					t.Errorf("Response.ToolCalls = %d calls; want 128", n)
				}
			}},
		{name: "huge reasoning", resp: flood(mockllm.FloodReasoning, 64*MiB), reason: provider.LimitReasoningBytes, written: 32 * MiB},
		{name: "too many chunks", resp: &mockllm.Response{Flood: &mockllm.Flood{Kind: mockllm.FloodText, Bytes: 1 << 20, Piece: 16}, Done: true},
			limits: provider.Limits{MaxChunks: 1000}, reason: provider.LimitChunks,
			check: func(t *testing.T, _ *provider.Result, rec *recorder) {
				if n := len(rec.frames); n != 1000 {
					t.Errorf("frames relayed = %d; want exactly MaxChunks", n)
				}
			}},
		{name: "stream over its limit", resp: &mockllm.Response{Flood: &mockllm.Flood{Kind: mockllm.FloodText, Bytes: 1 << 20, Piece: 16}, Done: true},
			limits: provider.Limits{MaxStreamBytes: 64 << 10}, reason: provider.LimitStreamBytes},
		{name: "text that escapes past the message limit", apis: []string{"chat"}, resp: escapedText(200 << 10), reason: provider.LimitMessageBytes},
		{name: "huge non-streamed body", apis: []string{"responses-body"}, resp: &mockllm.Response{Flood: &mockllm.Flood{Kind: mockllm.FloodBody, Bytes: 64 * MiB}},
			reason: provider.LimitBodyBytes, written: 32 * MiB},
		{name: "non-streamed body under the limit", apis: []string{"responses-body"}, resp: &mockllm.Response{Flood: &mockllm.Flood{Kind: mockllm.FloodBody, Bytes: 200 << 10}},
			check: func(t *testing.T, res *provider.Result, _ *recorder) {
				if n := len(res.Response.Text); n != 200<<10 {
					t.Errorf("Response.Text is %d bytes; want 200 KiB", n)
				}
			}},
	}
	for _, tt := range tests {
		apis := tt.apis
		if apis == nil {
			apis = []string{"chat", "responses"}
		}
		for _, a := range limitAPIs {
			if !strings.Contains(" "+strings.Join(apis, " ")+" ", " "+a.name+" ") {
				continue
			}
			t.Run(a.name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				// Alone on its route: one provider call, one classified failure.
				reg := provider.NewRegistry()
				hostile := serve(t, reg, "hostile", a, tt.resp)
				e := &provider.Executor{Registry: reg, Limits: tt.limits}
				rec := &recorder{}
				res, err := e.Execute(t.Context(), []provider.Target{hostile.target}, testRequest(), rec)
				if n := hostile.requests(); n != 1 {
					t.Errorf("HTTP requests = %d; want exactly 1", n)
				}
				if tt.reason == "" {
					if err != nil {
						t.Fatalf("Execute() = %v; want the answer served", err)
					}
					if tt.check != nil {
						tt.check(t, res, rec)
					}
					return
				}
				f := provider.AsFailure(err)
				if errors.Is(err, provider.ErrRelay) || f == nil || f.Class != provider.ClassResponseTooLarge || f.Reason != tt.reason {
					t.Fatalf("Execute() = %v; want RESPONSE_TOO_LARGE (%s)", err, tt.reason)
				}
				if len(res.Attempts) != 1 || res.Attempts[0].Class != provider.ClassResponseTooLarge {
					t.Errorf("Result.Attempts = %+v; want one RESPONSE_TOO_LARGE attempt", res.Attempts)
				}
				if tt.check != nil {
					tt.check(t, res, rec)
				}
				if tt.written > 0 {
					w := hostile.written(t)
					if w > tt.written {
						t.Errorf("server wrote %d bytes before the client hung up; want at most %d", w, tt.written)
					}
					t.Logf("server wrote %d bytes before the client hung up", w)
				}

				// First of two: the next target serves, still one call here.
				reg = provider.NewRegistry()
				hostile = serve(t, reg, "hostile", a, tt.resp)
				backup := serve(t, reg, "backup", limitAPIs[0], mockllm.NewStream("m").Text("fine").Finish("stop").Response())
				e = &provider.Executor{Registry: reg, Limits: tt.limits}
				res, err = e.Execute(t.Context(), []provider.Target{hostile.target, backup.target}, testRequest(), &recorder{})
				if err != nil || res.Target != backup.target || res.Response.Text != "fine" {
					t.Fatalf("Execute(hostile, backup) = %+v, %v; want served by the backup", res, err)
				}
				if n := hostile.requests(); n != 1 {
					t.Errorf("HTTP requests to the hostile target = %d; want exactly 1", n)
				}
			})
		}
	}
}

// frameLimiter is an Observer that refuses to relay frames over max bytes,
// as the turn's writer does with a record over the server's max payload.
type frameLimiter struct {
	recorder
	max int
}

func (o *frameLimiter) Frame(attempt int, target provider.Target, f provider.Frame) error {
	if len(f.Raw) > o.max {
		return provider.TooLarge(provider.LimitFrameBytes)
	}
	return o.recorder.Frame(attempt, target, f)
}

// TestExecutorFrameTooLargeToRelay: an observer that cannot relay a frame
// because of its size fails the attempt (not the execution): one call, and
// the chain falls back.
func TestExecutorFrameTooLargeToRelay(t *testing.T) {
	reg := provider.NewRegistry()
	hostile := serve(t, reg, "hostile", limitAPIs[0], flood(mockllm.FloodFrame, 100<<10))
	backup := serve(t, reg, "backup", limitAPIs[0], mockllm.NewStream("m").Text("fine").Finish("stop").Response())
	e := &provider.Executor{Registry: reg}
	obs := &frameLimiter{max: 64 << 10}
	res, err := e.Execute(t.Context(), []provider.Target{hostile.target, backup.target}, testRequest(), obs)
	if err != nil || res.Target != backup.target {
		t.Fatalf("Execute() = %+v, %v; want served by the backup", res, err)
	}
	if n := hostile.requests(); n != 1 {
		t.Errorf("HTTP requests to the hostile target = %d; want 1", n)
	}
	if len(res.Attempts) != 2 || res.Attempts[0].Class != provider.ClassResponseTooLarge {
		t.Errorf("Result.Attempts = %+v; want RESPONSE_TOO_LARGE, then success", res.Attempts)
	}
	fb := obs.kinds(provider.EventFallback)
	if len(fb) != 1 || fb[0].Failure.Reason != provider.LimitFrameBytes {
		t.Errorf("EventFallback = %+v; want one, for frame_bytes", fb)
	}
}

// TestLimitsFromConfig: the config's response limits convert to Limits
// field for field (what a worker does), with the same defaults.
func TestLimitsFromConfig(t *testing.T) {
	if got := provider.Limits(config.DefaultResponseLimits); got != provider.DefaultLimits {
		t.Errorf("Limits(config.DefaultResponseLimits) = %+v; want DefaultLimits %+v", got, provider.DefaultLimits)
	}
	c := config.Mock("http://127.0.0.1:9/v1")
	if got := provider.Limits(c.Limits.Response); got != provider.DefaultLimits {
		t.Errorf("Limits(Mock().Limits.Response) = %+v; want DefaultLimits", got)
	}
}

// TestExecutorLimitsReachAdapters: the executor hands its limits, defaults
// applied, to every attempt through the context.
func TestExecutorLimitsReachAdapters(t *testing.T) {
	var got provider.Limits
	a := &ctxAdapter{fakeAdapter: newFakeAdapter(t, "a", done("x")), seen: func(ctx context.Context) { got = provider.LimitsOf(ctx) }}
	reg := provider.NewRegistry()
	if _, err := reg.Register(registration(targetA, a, provider.RetryPolicy{})); err != nil {
		t.Fatal(err)
	}
	e := &provider.Executor{Registry: reg, Limits: provider.Limits{MaxTextBytes: 10}}
	if _, err := e.Execute(t.Context(), []provider.Target{targetA}, testRequest(), &recorder{}); err != nil {
		t.Fatal(err)
	}
	want := provider.DefaultLimits
	want.MaxTextBytes = 10
	if got != want {
		t.Errorf("LimitsOf(attempt ctx) = %+v; want %+v", got, want)
	}
	if l := provider.LimitsOf(t.Context()); l != provider.DefaultLimits {
		t.Errorf("LimitsOf(plain ctx) = %+v; want DefaultLimits", l)
	}
}

type ctxAdapter struct {
	*fakeAdapter
	seen func(ctx context.Context)
}

func (a *ctxAdapter) Stream(ctx context.Context, body []byte, sink provider.Sink) (*assemble.Response, error) {
	a.seen(ctx)
	return a.fakeAdapter.Stream(ctx, body, sink)
}

// TestEndlessDataLineMemory streams a 256 MiB data line without a newline
// at a worker with the default limits and reports what it cost: the bytes
// the server wrote before the client hung up and the bytes the test
// allocated meanwhile. Both stay a few MiB, not the 256 MiB sent (before
// the limits the worker grew by 4 GB).
func TestEndlessDataLineMemory(t *testing.T) {
	const MiB = 1 << 20
	reg := provider.NewRegistry()
	hostile := serve(t, reg, "hostile", limitAPIs[0], flood(mockllm.FloodLine, 256*MiB))
	e := &provider.Executor{Registry: reg}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := e.Execute(t.Context(), []provider.Target{hostile.target}, testRequest(), &recorder{})
	runtime.ReadMemStats(&after)
	if f := provider.AsFailure(err); f == nil || f.Reason != provider.LimitLineBytes {
		t.Fatalf("Execute() = %v; want RESPONSE_TOO_LARGE (%s)", err, provider.LimitLineBytes)
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	written := hostile.written(t)
	t.Logf("256 MiB endless data line: server wrote %d bytes before the client hung up; %d bytes allocated", written, allocated)
	if allocated > 32*MiB {
		t.Errorf("allocated %d bytes; want at most 32 MiB", allocated)
	}
	if written > 64*MiB {
		t.Errorf("server wrote %d bytes; want at most 64 MiB", written)
	}
}

package worker_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/provider/openaichat"
	"github.com/turnstream/turnstream/internal/worker"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// instantClock records retry waits without spending them, so retry tests
// need no wall time.
type instantClock struct {
	mu     sync.Mutex
	sleeps []time.Duration
}

func (c *instantClock) Now() time.Time { return time.Now() }
func (c *instantClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.mu.Unlock()
	return ctx.Err()
}

// TestFallbackThroughWorker: the primary target answers 503 three times
// (the attempt and its two retries), the turn completes on the fallback, and
// the events say so.
func TestFallbackThroughWorker(t *testing.T) {
	unavailable := func() *mockllm.Response {
		return mockllm.Error(http.StatusServiceUnavailable, "server_error", "overloaded", http.Header{"X-Request-Id": {"req_primary"}})
	}
	primary := mockllm.New(mockllm.Queue(unavailable(), unavailable(), unavailable()))
	ps := httptest.NewServer(primary)
	t.Cleanup(ps.Close)

	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{}))
	e.cfg = &config.Config{
		Providers: []config.Provider{
			{Name: "primary", API: config.API(openaichat.API.Name), BaseURL: ps.URL + "/v1"},
			{Name: "backup", API: config.API(openaichat.API.Name), BaseURL: e.http.URL + "/v1"},
		},
		Models: []config.Model{{Provider: "primary", Name: "p-1"}, {Provider: "backup", Name: "b-1"}},
		Routes: []config.Route{{Name: "default", Targets: []config.Target{{Provider: "primary", Model: "p-1"}, {Provider: "backup", Model: "b-1"}}}},
	}
	e.cfg.ApplyDefaults()
	clock := &instantClock{}
	e.startWorkerWith(func(o *worker.Options) { o.Clock = clock })

	ctx := ctxFor(t)
	turn, err := e.client().Submit(ctx, wire.TurnRequest{SessionID: "fb", TurnID: "t1", Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "hello"}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := turn.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Terminal.Type != wire.EventTurnCompleted {
		t.Fatalf("terminal = %s %v; want completed", res.Terminal.Type, res.Terminal.Payload)
	}
	final := res.Messages[len(res.Messages)-1]
	if final.Provider != "backup" || final.Model != "b-1" {
		t.Errorf("answer from %s/%s; want backup/b-1", final.Provider, final.Model)
	}
	if n := len(primary.Requests()); n != 3 {
		t.Errorf("primary requests = %d; want 3 (attempt and two retries)", n)
	}
	reqs := primary.Requests()
	for i := 1; i < len(reqs); i++ {
		if string(reqs[i].Body) != string(reqs[0].Body) {
			t.Errorf("retry %d body differs from the first attempt's", i)
		}
	}

	var retries, started, fallbacks []wire.SessionEvent
	for _, ev := range res.Events {
		switch ev.Type {
		case wire.EventLLMRetry:
			retries = append(retries, ev)
		case wire.EventLLMRetryStarted:
			started = append(started, ev)
		case wire.EventLLMFallback:
			fallbacks = append(fallbacks, ev)
		}
	}
	if len(retries) != 2 || len(started) != 2 || len(fallbacks) != 1 {
		t.Fatalf("llm/retry %d, llm/retry-started %d, llm/fallback %d; want 2, 2, 1", len(retries), len(started), len(fallbacks))
	}
	for i, ev := range retries {
		if ev.Payload["class"] != "SERVER" || ev.Payload["policy"] != "normal" || num(ev.Payload["retry"]) != i+1 || num(ev.Payload["http_status"]) != 503 {
			t.Errorf("llm/retry %d payload = %v; want class SERVER, policy normal, retry %d, http_status 503", i, ev.Payload, i+1)
		}
	}
	fb := fallbacks[0].Payload
	if fb["class"] != "SERVER" || fb["provider"] != "primary" || fb["to_provider"] != "backup" || fb["request_id"] != "req_primary" {
		t.Errorf("llm/fallback payload = %v; want SERVER from primary to backup with the request id", fb)
	}
	conforms(t, e.js, "fb", "t1")
	if len(clock.sleeps) != 2 {
		t.Errorf("retry waits = %v; want 2", clock.sleeps)
	}

	// Every attempt's chunks end with a marker: retrying, retrying, failed,
	// then completed on the fallback.
	chunks, _ := records[wire.Chunk](t, e.js, wire.StreamChunks, "turn.chunk.fb.t1")
	var markers []string
	for _, c := range chunks {
		if c.Marker != "" {
			markers = append(markers, c.Marker)
		}
	}
	want := []string{wire.MarkerRetrying, wire.MarkerRetrying, wire.MarkerFailed, wire.MarkerCompleted}
	if len(markers) != len(want) {
		t.Fatalf("attempt markers = %v; want %v", markers, want)
	}
	for i := range want {
		if markers[i] != want[i] {
			t.Errorf("attempt markers = %v; want %v", markers, want)
			break
		}
	}
}

// num reads a JSON number from a decoded payload.
func num(v any) int {
	switch n := v.(type) {
	case float64:
		return int(n)
	case int:
		return n
	case int64:
		return int(n)
	}
	return -1
}

// TestCapabilitySkip: a request with tools skips a primary model that
// cannot call tools, with the reason recorded, and the fallback serves it.
func TestCapabilitySkip(t *testing.T) {
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{}))
	noTools := false
	e.cfg = &config.Config{
		Providers: []config.Provider{{Name: "local", API: config.API(openaichat.API.Name), BaseURL: e.http.URL + "/v1"}},
		Models: []config.Model{
			{Provider: "local", Name: "tiny", SupportsTools: &noTools},
			{Provider: "local", Name: "big"},
		},
		Routes: []config.Route{{Name: "default", Targets: []config.Target{{Provider: "local", Model: "tiny"}, {Provider: "local", Model: "big"}}}},
	}
	e.cfg.ApplyDefaults()
	e.startWorker()
	e.serveTools(map[string]toolworker.Handler{"alpha": echoTool("alpha")})
	ctx := ctxFor(t)
	turn, err := e.client().Submit(ctx, wire.TurnRequest{SessionID: "caps", TurnID: "t1",
		Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "use alpha"}}, Tools: []wire.Tool{tool("alpha")}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := turn.Wait(ctx)
	if err != nil || res.Terminal.Type != wire.EventTurnCompleted {
		t.Fatalf("Wait() = %+v, %v; want completed", res, err)
	}
	for _, m := range e.mock.Requests() {
		if m.Model != "big" {
			t.Errorf("provider request for model %q; want only big", m.Model)
		}
	}
	var skipped []any
	for _, ev := range res.Events {
		if ev.Type == wire.EventLLMFallback {
			skipped = append(skipped, ev.Payload["skipped"])
		}
	}
	if len(skipped) != 2 || skipped[0] != "no_tools" || skipped[1] != "no_tools" {
		t.Errorf("llm/fallback skipped reasons = %v; want no_tools for each of the two steps", skipped)
	}
}

// TestFallbackAfterToolRound: the primary provider serves a tool round,
// then fails; the fallback, which accepts only 9-alphanumeric call ids,
// continues the same turn with the ids remapped on both sides of the pair
// and a valid request.
func TestFallbackAfterToolRound(t *testing.T) {
	unavailable := func() *mockllm.Response {
		return mockllm.Error(http.StatusInternalServerError, "server_error", "down", nil)
	}
	primary := mockllm.New(mockllm.Queue(
		mockllm.NewStream("p-1").Text("Looking. ").ToolCalls(5, mockllm.Call{ID: "call_Prim4ryCallId0123456789", Name: "alpha", Arguments: `{"q":"x"}`}).Finish("tool_calls").Response(),
		unavailable(), unavailable(), unavailable(),
	))
	ps := httptest.NewServer(primary)
	t.Cleanup(ps.Close)
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{}))
	e.cfg = &config.Config{
		Providers: []config.Provider{
			{Name: "primary", API: config.API(openaichat.API.Name), BaseURL: ps.URL + "/v1"},
			{Name: "mistral", API: config.API(openaichat.API.Name), BaseURL: e.http.URL + "/v1", ToolCallIDFormat: "alnum9"},
		},
		Models: []config.Model{{Provider: "primary", Name: "p-1"}, {Provider: "mistral", Name: "m-1"}},
		Routes: []config.Route{{Name: "default", Targets: []config.Target{{Provider: "primary", Model: "p-1"}, {Provider: "mistral", Model: "m-1"}}}},
	}
	e.cfg.ApplyDefaults()
	e.startWorkerWith(func(o *worker.Options) { o.Clock = &instantClock{} })
	e.serveTools(map[string]toolworker.Handler{"alpha": echoTool("alpha")})

	ctx := ctxFor(t)
	turn, err := e.client().Submit(ctx, wire.TurnRequest{SessionID: "fb2", TurnID: "t1",
		Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "use alpha"}}, Tools: []wire.Tool{tool("alpha")}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := turn.Wait(ctx)
	if err != nil || res.Terminal.Type != wire.EventTurnCompleted {
		t.Fatalf("Wait() = %+v, %v; want completed", res, err)
	}
	log := res.Messages
	if len(log) != 4 || log[1].ToolCalls[0].ID != "call_Prim4ryCallId0123456789" || log[3].Provider != "mistral" {
		t.Fatalf("session log = %+v; want the primary's tool round, then the fallback's answer", log)
	}
	reqs := e.mock.Requests()
	if len(reqs) != 1 {
		t.Fatalf("fallback requests = %d; want 1", len(reqs))
	}
	msgs := reqs[0].Messages
	if len(msgs) != 3 || msgs[0].Role != "user" || msgs[1].Role != "assistant" || msgs[2].Role != "tool" {
		t.Fatalf("fallback request messages = %+v; want user, assistant with the call, its result", msgs)
	}
	id := msgs[1].ToolCalls[0].ID
	if !regexp.MustCompile(`^[A-Za-z0-9]{9}$`).MatchString(id) {
		t.Errorf("fallback saw call id %q; want it remapped to 9 alphanumerics", id)
	}
	if msgs[2].ToolCallID != id {
		t.Errorf("fallback saw the result answer %q for call %q; want the same remapped id on both sides", msgs[2].ToolCallID, id)
	}
	if msgs[1].ToolCalls[0].Function.Name != "alpha" || msgs[1].ToolCalls[0].Function.Arguments != `{"q":"x"}` || msgs[2].Text() != `alpha got {"q":"x"}` {
		t.Errorf("fallback request call/result = %+v / %q; want the original name, arguments and result", msgs[1].ToolCalls[0], msgs[2].Text())
	}
}

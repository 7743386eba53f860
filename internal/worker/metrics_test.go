package worker_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/metrics"
	"github.com/turnstream/turnstream/internal/metrics/metricstest"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/ops"
	"github.com/turnstream/turnstream/internal/worker"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// serveOps serves m and ready on a loopback port until the test ends and
// returns its base URL.
func serveOps(t *testing.T, m *metrics.Set, ready func() error) string {
	t.Helper()
	srv, err := ops.Start(ops.Options{Addr: "127.0.0.1:0", Gatherer: m.Gatherer(), Ready: ready, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return "http://" + srv.Addr()
}

// TestMetricsCountTurns runs turns through a worker and a tool worker that
// count into one metrics set, scrapes /metrics over HTTP, and finds what
// the turns did: n turns completed in 2n steps with 2n provider requests
// and 2n tool calls, the tokens their messages report, one rejected
// request, and nothing left in flight.
func TestMetricsCountTurns(t *testing.T) {
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{Split: 3}))
	m := metrics.New()
	r := e.startWorkerWith(func(o *worker.Options) { o.Metrics = m })
	e.serveTools(map[string]toolworker.Handler{"alpha": echoTool("alpha"), "beta": echoTool("beta")}, toolworker.WithObserver(m.Tools()))
	base := serveOps(t, m, r.w.Ready)
	ctx := ctxFor(t)

	const n = 3
	c := e.client()
	for i := range n {
		turn, err := c.Submit(ctx, wire.TurnRequest{
			SessionID: "m", TurnID: fmt.Sprintf("t%d", i),
			Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "use both tools"}},
			Tools: []wire.Tool{tool("alpha"), tool("beta")},
		})
		if err != nil {
			t.Fatalf("Submit() = %v", err)
		}
		res, err := turn.Wait(ctx)
		if err != nil || res.Terminal.Type != wire.EventTurnCompleted {
			t.Fatalf("turn %d: Wait() = %v, %v; want completed", i, res, err)
		}
	}
	if _, err := e.js.Publish(ctx, "turn.submit.m", []byte("{not json")); err != nil {
		t.Fatal(err)
	}

	// The worker settles a turn, and a tool worker a call, just after
	// what the client sees: scrape until they have.
	var s metricstest.Scrape
	eventually(t, "the metrics to count every turn, call and rejection", func() bool {
		s = metricstest.Get(t, base+ops.PathMetrics)
		return s.Sum(metrics.TurnsTotal, "outcome", "completed") == n && s.Sum(metrics.ToolCallsTotal) == 2*n &&
			s.Sum(metrics.TurnsTotal, "outcome", "rejected") == 1 && s.Sum(metrics.TurnsInFlight) == 0
	})
	var input, cached, output float64
	msgs, _ := records[wire.Message](t, e.js, wire.StreamMessages, "turn.message.m")
	for _, msg := range msgs {
		if msg.Usage != nil {
			input, cached, output = input+float64(msg.Usage.InputTokens), cached+float64(msg.Usage.CachedInputTokens), output+float64(msg.Usage.OutputTokens)
		}
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{metrics.TurnsTotal, []string{"outcome", "failed"}, 0},
		{metrics.TurnsTotal, []string{"outcome", "rejected", "reason", wire.ReasonMalformed}, 1},
		{metrics.DeliveriesTotal, []string{"outcome", "completed"}, n},
		{metrics.StepsTotal, []string{"route", "default"}, 2 * n},
		{metrics.ProviderRequestsTotal, []string{"provider", "mock", "model", "mock-1", "class", metrics.ClassOK}, 2 * n},
		{metrics.ProviderRetriesTotal, nil, 0},
		{metrics.ProviderFallbacksTotal, nil, 0},
		{metrics.FirstChunk + "_count", []string{"provider", "mock", "model", "mock-1"}, 2 * n},
		{metrics.TurnLatency + "_count", []string{"outcome", "completed"}, n},
		{metrics.InputTokensTotal, []string{"route", "default"}, input},
		{metrics.CachedInputTokensTotal, []string{"route", "default"}, cached},
		{metrics.OutputTokensTotal, []string{"route", "default"}, output},
		{metrics.ToolCallsTotal, []string{"tool", "alpha", "outcome", string(toolworker.CallOK)}, n},
		{metrics.ToolCallsTotal, []string{"tool", "beta", "outcome", string(toolworker.CallOK)}, n},
		{metrics.ToolCallDuration + "_count", []string{"tool", "alpha"}, n},
		{metrics.RedeliveriesTotal, nil, 0},
		{metrics.FencedWritesTotal, nil, 0},
	} {
		if got := s.Sum(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v; want %v\n%s", c.name, c.labels, got, c.want, s.Lines(c.name))
		}
	}
	if input == 0 || output == 0 {
		t.Errorf("the turns' messages report %v input and %v output tokens; want some", input, output)
	}
	if s.Sum(metrics.PublishAckLag+"_count") == 0 {
		t.Errorf("%s counted no publish ack", metrics.PublishAckLag)
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if !s.Has(name) {
			t.Errorf("/metrics has no %s: the Go and process collectors are registered", name)
		}
	}
	ids := map[string]bool{"m": true}
	for i := range n {
		ids[fmt.Sprintf("t%d", i)] = true
	}
	for _, x := range s.Samples {
		for k, v := range x.Labels {
			if ids[v] {
				t.Errorf("%s has label %s=%q: a session or turn id", x.Name, k, v)
			}
		}
	}
	t.Logf("/metrics excerpt:\n%s", s.Lines("turnstream_"))
}

// TestReadyzFollowsNATS: a worker's /readyz answers 200 once it is bound,
// 503 naming NATS while its server is down, and 200 again once the server
// is back; /healthz answers 200 throughout.
func TestReadyzFollowsNATS(t *testing.T) {
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{}))
	m := metrics.New()
	r := e.startWorkerWith(func(o *worker.Options) { o.Metrics = m })
	base := serveOps(t, m, r.w.Ready)

	waitProbe(t, base+ops.PathReady, http.StatusOK, "ready")
	e.srv.Shutdown()
	waitProbe(t, base+ops.PathReady, http.StatusServiceUnavailable, "nats")
	waitProbe(t, base+ops.PathHealth, http.StatusOK, "ok")
	e.srv.Restart()
	waitProbe(t, base+ops.PathReady, http.StatusOK, "ready")
	waitProbe(t, base+ops.PathHealth, http.StatusOK, "ok")
}

// waitProbe GETs u until it answers code with a body containing want,
// failing the test after wait.
func waitProbe(t *testing.T, u string, code int, want string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		got, body := probe(u)
		if got == code && strings.Contains(body, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s = %d %q; want %d with %q", u, got, body, code, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// probe is the status and body of GET u, 0 and the error if it fails.
func probe(u string) (int, string) {
	resp, err := http.Get(u) //nolint:noctx // a loopback test server
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/turnstream/turnstream/internal/demotools"
	"github.com/turnstream/turnstream/internal/metrics"
	"github.com/turnstream/turnstream/internal/metrics/metricstest"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/internal/ops"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/wire"
)

// opsWait bounds each wait of these tests; it is never a speed.
const opsWait = 30 * time.Second

// mainProcess is this test binary run as `turnstream args...`, its stderr
// a pipe (no terminal), collected.
type mainProcess struct {
	cmd    *exec.Cmd
	stderr *lockedBuffer
	done   chan error
}

func startMain(t *testing.T, args ...string) *mainProcess {
	t.Helper()
	return startMainWith(t, nil, args...)
}

// startMainWith is startMain with env added to the environment.
func startMainWith(t *testing.T, env []string, args ...string) *mainProcess {
	t.Helper()
	p := &mainProcess{cmd: exec.Command(os.Args[0], "-test.run=^$"), stderr: &lockedBuffer{}, done: make(chan error, 1)}
	p.cmd.Env = append(append(os.Environ(), env...), envMainArgs+"="+strings.Join(args, "\n"))
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.cmd.Process.Kill() //nolint:errcheck // it may have exited
		err := <-p.done
		p.done <- err
		if t.Failed() {
			t.Logf("turnstream %s stderr:\n%s", args[0], p.stderr.String())
		}
	})
	return p
}

// stop sends SIGTERM and waits for a clean exit.
func (p *mainProcess) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil {
			t.Errorf("turnstream %s after SIGTERM: %v", p.cmd.Args[1:], err)
		}
	case <-time.After(opsWait):
		t.Errorf("turnstream did not exit after SIGTERM")
	}
}

// mockConfig writes a worker config whose one provider is the mock at
// base, with worker settings worker (YAML), and returns its path. The
// provider's key is read from TURNSTREAM_TEST_KEY, which it sets.
func mockConfig(t *testing.T, base, worker string) string {
	t.Helper()
	t.Setenv("TURNSTREAM_TEST_KEY", "k")
	cfg := filepath.Join(t.TempDir(), "worker.yaml")
	yaml := `providers:
  - {name: mock, api: openai_chat_completions, base_url: "` + base + `", api_key_env: TURNSTREAM_TEST_KEY}
models:
  - {provider: mock, name: mock-1, supports_tools: true, context_tokens: 100000}
routes:
  - {name: default, targets: [{provider: mock, model: mock-1}]}
worker: ` + worker + "\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// completeTurn submits the turn t1 of session, offering the demo tools,
// and waits until it completed.
func completeTurn(t *testing.T, ctx context.Context, nc *nats.Conn, session, prompt string) {
	t.Helper()
	c, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	turn, err := c.Submit(ctx, wire.TurnRequest{SessionID: session, TurnID: "t1",
		Input: []wire.InputMessage{{Role: wire.RoleUser, Content: prompt}}, Tools: demotools.Tools()})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := turn.Wait(ctx); err != nil || res.Terminal.Type != wire.EventTurnCompleted {
		t.Fatalf("Wait() = %v, %v; want completed", res, err)
	}
}

// probeUntil GETs u until it answers code with want in its body.
func probeUntil(t *testing.T, u string, code int, want string) {
	t.Helper()
	var got int
	var body string
	for deadline := time.Now().Add(opsWait); ; time.Sleep(20 * time.Millisecond) {
		got, body = 0, ""
		if resp, err := http.Get(u); err == nil { //nolint:noctx // a loopback test server
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			got, body = resp.StatusCode, string(b)
		} else {
			body = err.Error()
		}
		if got == code && strings.Contains(body, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s = %d %q; want %d with %q", u, got, body, code, want)
		}
	}
}

// TestWorkerAndToolsOps runs `turnstream worker` and `turnstream tools`
// with --metrics-addr against a NATS server: both turn ready, a turn with
// the demo tools shows in their /metrics, both turn unready while the
// server is down and ready once it is back. The worker logs JSON (its
// stderr is no terminal), every line of which parses; the tool worker,
// asked for console text, writes it without colour codes.
func TestWorkerAndToolsOps(t *testing.T) {
	srv := natstest.Start(t)
	hs := httptest.NewServer(mockllm.New(mockllm.Default(mockllm.DefaultOptions{})))
	t.Cleanup(hs.Close)
	cfg := mockConfig(t, hs.URL+"/v1", "{drain_timeout: 5s}")
	workerAddr := fmt.Sprintf("127.0.0.1:%d", natstest.FreePort(t))
	toolsAddr := fmt.Sprintf("127.0.0.1:%d", natstest.FreePort(t))
	worker := startMain(t, "worker", "--config", cfg, "--nats-url", srv.URL(), "--metrics-addr", workerAddr)
	probeUntil(t, "http://"+workerAddr+ops.PathReady, http.StatusOK, "ready")
	tools := startMain(t, "tools", "--nats-url", srv.URL(), "--metrics-addr", toolsAddr, "--log-format", "console")
	probeUntil(t, "http://"+toolsAddr+ops.PathReady, http.StatusOK, "ready")

	ctx, cancel := context.WithTimeout(t.Context(), opsWait)
	defer cancel()
	completeTurn(t, ctx, srv.Connect(), "ops", "What is 17 * 23?")
	var ws, ts metricstest.Scrape
	for deadline := time.Now().Add(opsWait); ; time.Sleep(20 * time.Millisecond) {
		ws, ts = metricstest.Get(t, "http://"+workerAddr+ops.PathMetrics), metricstest.Get(t, "http://"+toolsAddr+ops.PathMetrics)
		if ws.Sum(metrics.TurnsTotal, "outcome", "completed") == 1 && ts.Sum(metrics.ToolCallsTotal) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the metrics never counted the turn and its two tool calls:\n%s\n%s", ws.Lines("turnstream_turns"), ts.Lines("turnstream_tool_calls"))
		}
	}
	for _, c := range []struct {
		s      metricstest.Scrape
		name   string
		labels []string
		want   float64
	}{
		{ws, metrics.StepsTotal, []string{"route", "default"}, 2},
		{ws, metrics.ProviderRequestsTotal, []string{"class", metrics.ClassOK}, 2},
		{ts, metrics.ToolCallsTotal, []string{"tool", "calculate", "outcome", "ok"}, 1},
		{ts, metrics.ToolCallsTotal, []string{"tool", "get_time", "outcome", "ok"}, 1},
	} {
		if got := c.s.Sum(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v; want %v", c.name, c.labels, got, c.want)
		}
	}
	if ws.Sum(metrics.InputTokensTotal) == 0 || ws.Sum(metrics.OutputTokensTotal) == 0 {
		t.Errorf("the worker counted no tokens:\n%s", ws.Lines("turnstream_"))
	}

	srv.Shutdown()
	probeUntil(t, "http://"+workerAddr+ops.PathReady, http.StatusServiceUnavailable, "nats")
	probeUntil(t, "http://"+toolsAddr+ops.PathReady, http.StatusServiceUnavailable, "nats")
	probeUntil(t, "http://"+workerAddr+ops.PathHealth, http.StatusOK, "ok")
	srv.Restart()
	probeUntil(t, "http://"+workerAddr+ops.PathReady, http.StatusOK, "ready")
	probeUntil(t, "http://"+toolsAddr+ops.PathReady, http.StatusOK, "ready")
	tools.stop(t)
	worker.stop(t)

	settled := 0
	for i, line := range strings.Split(strings.TrimSpace(worker.stderr.String()), "\n") {
		var l struct {
			Level, Message string
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil || l.Level == "" || l.Message == "" {
			t.Errorf("worker stderr line %d is not a JSON log line (%v): %s", i+1, err, line)
		}
		if l.Message == "delivery settled" {
			settled++
		}
	}
	if settled != 1 {
		t.Errorf("the worker logged %d settled deliveries; want 1", settled)
	}
	out := tools.stderr.String()
	if strings.Contains(out, "\x1b[") {
		t.Errorf("tools --log-format console wrote colour codes to a pipe:\n%q", out)
	}
	if !strings.Contains(out, "INF") || strings.HasPrefix(strings.TrimSpace(out), "{") {
		t.Errorf("tools --log-format console wrote no console text:\n%s", out)
	}
}

// TestDevOps runs `turnstream dev --metrics-addr`: ready once its stack
// is, and its /metrics count a turn through its worker and demo tools.
func TestDevOps(t *testing.T) {
	natsAddr := fmt.Sprintf("127.0.0.1:%d", natstest.FreePort(t))
	opsAddr := fmt.Sprintf("127.0.0.1:%d", natstest.FreePort(t))
	ctx, cancel := context.WithTimeout(t.Context(), 2*opsWait)
	defer cancel()
	var out lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- dispatch(ctx, []string{"dev", "--listen", natsAddr, "--metrics-addr", opsAddr, "--latency", "0s", "--log-level", "warn"}, &out)
	}()
	probeUntil(t, "http://"+opsAddr+ops.PathReady, http.StatusOK, "ready")
	nc, err := nats.Connect("nats://" + natsAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	completeTurn(t, ctx, nc, "dev", "What time is it?")
	var s metricstest.Scrape
	for deadline := time.Now().Add(opsWait); ; time.Sleep(20 * time.Millisecond) {
		s = metricstest.Get(t, "http://"+opsAddr+ops.PathMetrics)
		if s.Sum(metrics.TurnsTotal, "outcome", "completed") == 1 && s.Sum(metrics.ToolCallsTotal, "outcome", "ok") >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dev's metrics never counted the turn and its tool calls:\n%s", s.Lines("turnstream_"))
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("dev: %v\n%s", err, out.String())
	}
}

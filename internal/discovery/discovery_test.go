package discovery_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/demotools"
	"github.com/turnstream/turnstream/internal/discovery"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/internal/worker"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// wait bounds every blocking step so that a bug fails a test instead of
// hanging it; it is never a performance assertion.
const wait = 30 * time.Second

// secret is the value of the providers' API key and of the credentials
// in a base URL: no answer of a service may hold it.
const secret = "sk-discoveryS3CRET"

func testLog(t *testing.T) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
}

// fleet is a real worker registered as turnstream-worker and the demo tool
// worker (which registers turnstream-tools itself) on one server.
type fleet struct {
	srv    *natstest.Server
	worker *worker.Worker
	stop   func()
}

func startFleet(t *testing.T) *fleet {
	t.Helper()
	srv := natstest.Start(t)
	hs := httptest.NewServer(mockllm.New(mockllm.Default(mockllm.DefaultOptions{})))
	t.Cleanup(hs.Close)
	t.Setenv("TURNSTREAM_DISCOVERY_KEY", secret)
	cfg, err := config.Parse([]byte(`providers:
  - {name: mock, api: openai_chat_completions, base_url: "` + hs.URL + `/v1", api_key_env: TURNSTREAM_DISCOVERY_KEY}
  - name: backup
    api: anthropic_messages
    base_url: "https://svc:` + secret + `@llm.example.com/v1?key=` + secret + `"
    api_key_env: TURNSTREAM_DISCOVERY_KEY
    headers: {X-Team: ` + secret + `}
models:
  - {provider: mock, name: mock-1, supports_tools: true}
  - {provider: backup, name: claude-x}
routes:
  - {name: default, targets: [{provider: mock, model: mock-1}, {provider: backup, model: claude-x}]}
worker: {concurrency: 3, drain_timeout: 5s}
`))
	if err != nil {
		t.Fatalf("config.Parse() = %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	wc := srv.Connect()
	w, err := worker.New(ctx, worker.Options{Conn: wc, Config: cfg, Log: testLog(t), HTTPClient: hs.Client()})
	if err != nil {
		t.Fatalf("worker.New() = %v", err)
	}
	// As `turnstream worker` does.
	svc, err := discovery.Worker(wc, w, cfg, "v1.2.3", testLog(t))
	if err != nil {
		t.Fatalf("discovery.Worker() = %v", err)
	}
	runCtx, stopRun := context.WithCancel(context.Background())
	workerDone, toolsDone := make(chan error, 1), make(chan error, 1)
	go func() {
		defer svc.Stop() //nolint:errcheck // checked by the test after stop
		workerDone <- w.Run(runCtx)
	}()
	tc := srv.Connect()
	tjs, err := jetstream.New(tc)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		toolsDone <- toolworker.Serve(runCtx, tjs, demotools.Handlers(), toolworker.WithIdempotent(demotools.Idempotent()...),
			toolworker.WithLogger(testLog(t)), toolworker.WithVersion("v0.9.0"))
	}()
	f := &fleet{srv: srv, worker: w}
	var stopped bool
	f.stop = func() {
		if stopped {
			return
		}
		stopped = true
		stopRun()
		for _, ch := range []chan error{workerDone, toolsDone} {
			select {
			case err := <-ch:
				if err != nil {
					t.Errorf("a component stopped with %v", err)
				}
			case <-time.After(wait):
				t.Fatal("a component did not stop")
			}
		}
	}
	t.Cleanup(f.stop)
	return f
}

// gather sends a request on subject and collects the answers that come
// within a moment, as `nats micro ls` does.
func gather(t *testing.T, nc *nats.Conn, subject string) [][]byte {
	t.Helper()
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe() //nolint:errcheck // the test ends with the connection
	if err := nc.PublishRequest(subject, inbox, nil); err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for {
		m, err := sub.NextMsg(300 * time.Millisecond)
		if err != nil {
			return out
		}
		if len(m.Data) > 0 {
			out = append(out, m.Data)
		}
	}
}

// eventually waits until cond holds; the bound only turns a hang into a
// failure. Stop drains a service's subscriptions: the server learns of it
// a moment later.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(wait); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

// pingNames are the service names answering $SRV.PING.
func pingNames(t *testing.T, nc *nats.Conn) []string {
	t.Helper()
	var names []string
	for _, b := range gather(t, nc, "$SRV.PING") {
		var p micro.Ping
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatalf("PING answer %s: %v", b, err)
		}
		if p.Type != micro.PingResponseType {
			t.Errorf("PING answer type = %q; want %q", p.Type, micro.PingResponseType)
		}
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}

// request sends a request on subject and decodes its JSON answer into v,
// returning the raw answer.
func request(t *testing.T, nc *nats.Conn, subject string, v any) []byte {
	t.Helper()
	m, err := nc.Request(subject, nil, wait)
	if err != nil {
		t.Fatalf("request %s: %v", subject, err)
	}
	if err := json.Unmarshal(m.Data, v); err != nil {
		t.Fatalf("answer of %s = %s: %v", subject, m.Data, err)
	}
	return m.Data
}

// TestFleet: a worker and a tool worker on one server answer $SRV.PING;
// INFO lists the worker's config endpoint; the config endpoints answer
// summaries naming the providers and the tools without the key, the
// credentials of a base URL or a header's value; STATS answers with live
// counters that count a turn's tool calls; once stopped, neither answers.
func TestFleet(t *testing.T) {
	f := startFleet(t)
	op := f.srv.Connect()
	want := []string{discovery.ToolsName, discovery.WorkerName}
	var names []string
	for deadline := time.Now().Add(wait); !slices.Equal(names, want); {
		if time.Now().After(deadline) {
			t.Fatalf("$SRV.PING answered by %v; want %v", names, want)
		}
		names = pingNames(t, op)
	}

	var info micro.Info
	request(t, op, "$SRV.INFO."+discovery.WorkerName, &info)
	if info.Name != discovery.WorkerName || info.Version != "1.2.3" || info.Type != micro.InfoResponseType {
		t.Errorf("INFO = %+v; want %s version 1.2.3", info, discovery.WorkerName)
	}
	if got := info.Metadata["instance"]; got != f.worker.Instance() || info.Metadata["prefix"] != "turn" {
		t.Errorf("INFO metadata = %v; want instance %s and prefix turn", info.Metadata, f.worker.Instance())
	}
	if len(info.Endpoints) != 1 || info.Endpoints[0].Name != discovery.ConfigEndpoint || info.Endpoints[0].Subject != "turn.svc.worker.config" {
		t.Errorf("INFO endpoints = %+v; want config on turn.svc.worker.config", info.Endpoints)
	}

	var wreply discovery.ConfigReply
	raw := request(t, op, "turn.svc.worker.config", &wreply)
	if strings.Contains(string(raw), secret) {
		t.Errorf("the worker's config summary holds the secret: %s", raw)
	}
	var summary config.Summary
	if err := json.Unmarshal(wreply.Config, &summary); err != nil {
		t.Fatalf("worker config %s: %v", wreply.Config, err)
	}
	var providers []string
	for _, p := range summary.Providers {
		providers = append(providers, p.Name)
	}
	if !slices.Equal(providers, []string{"mock", "backup"}) || summary.Providers[1].BaseURL != "https://llm.example.com/v1" ||
		!slices.Equal(summary.Providers[1].HeaderNames, []string{"X-Team"}) || summary.Worker.Concurrency != 3 {
		t.Errorf("worker config summary = %s; want providers mock and backup, backup's URL bare, its header's name, concurrency 3", wreply.Config)
	}
	if wreply.Name != discovery.WorkerName || wreply.Instance != f.worker.Instance() || wreply.ID != info.ID {
		t.Errorf("config reply from %s %s %s; want the worker %s %s", wreply.Name, wreply.ID, wreply.Instance, info.ID, f.worker.Instance())
	}

	var treply discovery.ConfigReply
	raw = request(t, op, "turn.svc.tools.config", &treply)
	var tools discovery.ToolsConfig
	if err := json.Unmarshal(treply.Config, &tools); err != nil {
		t.Fatalf("tools config %s: %v", treply.Config, err)
	}
	if treply.Name != discovery.ToolsName || treply.Version != "0.9.0" || len(tools.Tools) != 2 ||
		tools.Tools[0] != (discovery.ToolConfig{Name: "calculate", Subject: "turn.tool.calculate", Consumer: "tool-calculate", Idempotent: true}) {
		t.Errorf("tools config = %s; want turnstream-tools 0.9.0 serving calculate and get_time", raw)
	}

	// A turn that calls both tools.
	cl, err := client.New(f.srv.Connect())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	turn, err := cl.Submit(ctx, wire.TurnRequest{SessionID: "disc", TurnID: "t1",
		Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "What time is it, and what is 17 * 23?"}}, Tools: demotools.Tools()})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := turn.Wait(ctx); err != nil || res.Terminal.Type != wire.EventTurnCompleted {
		t.Fatalf("turn = %+v, %v; want completed", res, err)
	}
	turn.Close()

	// The turn's delivery is settled (acked) just after its end is
	// published.
	var wstats micro.Stats
	var ws discovery.WorkerStats
	eventually(t, "the worker holds no delivery", func() bool {
		request(t, op, "$SRV.STATS."+discovery.WorkerName, &wstats)
		if wstats.Type != micro.StatsResponseType || len(wstats.Endpoints) != 1 {
			t.Fatalf("worker STATS = %+v; want the config endpoint's", wstats)
		}
		if err := json.Unmarshal(wstats.Endpoints[0].Data, &ws); err != nil {
			t.Fatalf("worker STATS data %s: %v", wstats.Endpoints[0].Data, err)
		}
		return ws.TurnsInFlight == 0
	})
	if ws != (discovery.WorkerStats{TurnsInFlight: 0, Concurrency: 3, Ready: true}) || wstats.Endpoints[0].NumRequests != 1 {
		t.Errorf("worker STATS = %s, %d config requests; want ready, none in flight, concurrency 3, 1 request", wstats.Endpoints[0].Data, wstats.Endpoints[0].NumRequests)
	}
	var ts discovery.ToolsStats
	for deadline := time.Now().Add(wait); ts.CallsHandled < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("tools STATS = %+v; want 2 calls handled", ts)
		}
		var tstats micro.Stats
		request(t, op, "$SRV.STATS."+discovery.ToolsName, &tstats)
		if err := json.Unmarshal(tstats.Endpoints[0].Data, &ts); err != nil {
			t.Fatalf("tools STATS data %s: %v", tstats.Endpoints[0].Data, err)
		}
	}
	for _, tool := range ts.Tools {
		if tool.State != "bound" || tool.Calls != 1 || tool.Outcomes["ok"] != 1 {
			t.Errorf("tools STATS %s = %+v; want bound, 1 call ok", tool.Name, tool)
		}
	}

	f.stop()
	eventually(t, "no service answers $SRV.PING after the worker and the tool worker stopped", func() bool { return len(pingNames(t, op)) == 0 })
}

// TestRegisterRefused: a user who may not subscribe to $SRV is refused the
// registration (ErrRefused), and nothing stays subscribed. (A tool worker
// refused so serves anyway: pkg/toolworker's
// TestServeGoesOnWhenDiscoveryRefused.)
func TestRegisterRefused(t *testing.T) {
	srv := natstest.StartWithUsers(t,
		natstest.User("confined", "pw", nil, []string{"_INBOX.>"}),
		natstest.User("op", "pw", nil, nil))
	nc := srv.ConnectAs("confined", "pw", nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	svc, err := discovery.Register(nc, discovery.Spec{Name: discovery.ToolsName, Role: discovery.ToolsRole, Config: discovery.ToolsConfig{}})
	if !errors.Is(err, discovery.ErrRefused) || !errors.Is(err, nats.ErrPermissionViolation) || svc != nil {
		t.Fatalf("Register() = %v, %v; want nil and an error wrapping ErrRefused and the violation", svc, err)
	}
	eventually(t, "the refused service's subscriptions are gone", func() bool { return nc.NumSubscriptions() == 0 })
	if names := pingNames(t, srv.ConnectAs("op", "pw")); len(names) > 0 {
		t.Errorf("$SRV.PING answered by %v; want none", names)
	}
}

func TestRegisterInvalid(t *testing.T) {
	srv := natstest.Start(t)
	closed := srv.Connect()
	closed.Close()
	tests := []struct {
		name string
		nc   *nats.Conn
		spec discovery.Spec
	}{
		{"nil connection", nil, discovery.Spec{Name: discovery.WorkerName, Role: discovery.WorkerRole}},
		{"no name", srv.Connect(), discovery.Spec{Role: discovery.WorkerRole}},
		{"bad role", srv.Connect(), discovery.Spec{Name: discovery.WorkerName, Role: "a.b"}},
		{"bad name", srv.Connect(), discovery.Spec{Name: "turnstream worker", Role: discovery.WorkerRole}},
		{"summary that does not encode", srv.Connect(), discovery.Spec{Name: discovery.WorkerName, Role: discovery.WorkerRole, Config: func() {}}},
		{"closed connection", closed, discovery.Spec{Name: discovery.WorkerName, Role: discovery.WorkerRole}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, err := discovery.Register(tt.nc, tt.spec)
			if err == nil || svc != nil {
				t.Errorf("Register() = %v, %v; want an error", svc, err)
			}
			if err := svc.Stop(); err != nil {
				t.Errorf("Stop() of a nil *Service = %v; want nil", err)
			}
		})
	}
}

// TestStop: Stop is idempotent, and a stopped service answers nothing.
func TestStop(t *testing.T) {
	srv := natstest.Start(t)
	nc := srv.Connect()
	svc, err := discovery.Register(nc, discovery.Spec{Name: discovery.ToolsName, Role: discovery.ToolsRole, Version: "devel-0123456789ab-dirty",
		Config: discovery.ToolsConfig{Prefix: "turn"}})
	if err != nil {
		t.Fatalf("Register() = %v", err)
	}
	if v := svc.Info().Version; v != "0.0.0+devel-0123456789ab-dirty" {
		t.Errorf("version = %q; want the devel build as SemVer build metadata", v)
	}
	op := srv.Connect()
	if names := pingNames(t, op); !slices.Equal(names, []string{discovery.ToolsName}) {
		t.Errorf("$SRV.PING answered by %v; want %s", names, discovery.ToolsName)
	}
	for range 2 {
		if err := svc.Stop(); err != nil {
			t.Errorf("Stop() = %v", err)
		}
	}
	eventually(t, "no service answers $SRV.PING after Stop", func() bool { return len(pingNames(t, op)) == 0 })
	if _, err := op.Request("turn.svc.tools.config", nil, time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Errorf("config request after Stop = %v; want no responders", err)
	}
}

// TestServiceOutlivesAServerRestart: a registered service answers PING and
// its config endpoint again once its server is back (the connection
// subscribes again on its reconnect); nothing re-registers it.
func TestServiceOutlivesAServerRestart(t *testing.T) {
	srv := natstest.Start(t)
	svc, err := discovery.Register(srv.Connect(), discovery.Spec{Name: discovery.ToolsName, Role: discovery.ToolsRole,
		Config: discovery.ToolsConfig{Prefix: "turn"}})
	if err != nil {
		t.Fatalf("Register() = %v", err)
	}
	defer svc.Stop() //nolint:errcheck // test end
	op := srv.Connect()
	srv.Restart()
	eventually(t, "the service to answer $SRV.PING after the restart", func() bool {
		return slices.Equal(pingNames(t, op), []string{discovery.ToolsName})
	})
	if _, err := op.Request("turn.svc.tools.config", nil, 2*time.Second); err != nil {
		t.Errorf("config request after the restart = %v; want an answer", err)
	}
}

package deploy

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/demotools"
	"github.com/turnstream/turnstream/internal/discovery"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/worker"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// stack runs a worker (as worker) and the demo tool worker (as
// toolworker), each registered as its NATS service, on the server at url
// until the test ends, and returns their connections.
func stack(t *testing.T, url string) (wc, tc *conn) {
	t.Helper()
	return stackWith(t, url, mockllm.Default(mockllm.DefaultOptions{}))
}

// stackWith is stack with the mock provider answering by script.
func stackWith(t *testing.T, url string, script mockllm.Script) (wc, tc *conn) {
	t.Helper()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	mock := httptest.NewServer(mockllm.New(script))
	t.Cleanup(mock.Close)
	cfg := config.Mock(mock.URL + "/v1")
	cfg.Worker.DrainTimeout = config.Duration(5 * time.Second)

	runCtx, stop := context.WithCancel(context.WithoutCancel(t.Context()))
	var done []chan error
	run := func(fn func(context.Context) error) {
		ch := make(chan error, 1)
		done = append(done, ch)
		go func() { ch <- fn(runCtx) }()
	}
	wc = connect(t, url, "worker")
	tc = connect(t, url, "toolworker")
	// Registered after the connections' cleanups, so it runs first: the
	// components stop before their connections close.
	t.Cleanup(func() {
		stop()
		for _, ch := range done {
			select {
			case err := <-ch:
				if err != nil {
					t.Errorf("component stopped with %v", err)
				}
			case <-time.After(wait):
				t.Error("a component did not stop")
			}
		}
	})
	w, err := worker.New(ctxFor(t), worker.Options{Conn: wc.Conn, Config: cfg, Log: log, HTTPClient: &http.Client{}})
	if err != nil {
		t.Fatalf("worker.New() = %v", err)
	}
	// Its NATS service, as `turnstream worker` registers it (the tool
	// worker's registers itself).
	svc, err := discovery.Worker(wc.Conn, w, cfg, "", log)
	if err != nil {
		t.Fatalf("discovery.Worker() = %v", err)
	}
	run(func(ctx context.Context) error {
		defer svc.Stop() //nolint:errcheck // the connection closes next
		return w.Run(ctx)
	})
	tjs, err := jetstream.New(tc.Conn)
	if err != nil {
		t.Fatalf("jetstream.New() = %v", err)
	}
	run(func(ctx context.Context) error {
		return toolworker.Serve(ctx, tjs, demotools.Handlers(), toolworker.WithIdempotent(demotools.Idempotent()...), toolworker.WithLogger(log))
	})
	return wc, tc
}

// TestTurnWithRoles runs a whole turn with tools on a server started from
// nats-server.conf, each component connected as the user of its role: a
// worker (worker), the demo tool worker (toolworker), a client submitting
// and following the turn (client) and an audit tap (auditor). None of them
// may hit a permissions violation.
func TestTurnWithRoles(t *testing.T) {
	setPasswords(t)
	srv := startServer(t, loadConfig(t, serverConf))
	url := srv.ClientURL()
	wc, tc := stack(t, url)

	// The auditor taps the session's events from the start, as `turnstream
	// tap` does: live doorbells and direct gets, no consumer.
	ac := connect(t, url, "auditor")
	acl, err := client.New(ac.Conn)
	if err != nil {
		t.Fatalf("client.New() = %v", err)
	}
	tap, err := acl.Tap(ctxFor(t), client.TapOptions{Session: "roles"})
	if err != nil {
		t.Fatalf("auditor: Tap() = %v", err)
	}
	defer tap.Close()

	cc := connect(t, url, "client")
	cl, err := client.New(cc.Conn)
	if err != nil {
		t.Fatalf("client.New() = %v", err)
	}
	ctx := ctxFor(t)
	turn, err := cl.Submit(ctx, wire.TurnRequest{
		SessionID: "roles", TurnID: "t1",
		Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "What time is it, and what is 17 * 23?"}},
		Tools: demotools.Tools(),
	})
	if err != nil {
		t.Fatalf("client: Submit() = %v", err)
	}
	res, err := turn.Wait(ctx)
	if err != nil {
		t.Fatalf("client: Wait() = %v", err)
	}
	if res.Terminal.Type != wire.EventTurnCompleted {
		t.Fatalf("terminal = %s %v; want %s", res.Terminal.Type, res.Terminal.Payload, wire.EventTurnCompleted)
	}
	if res.Chunks == 0 {
		t.Error("client received no chunks")
	}
	var results []string
	for _, m := range res.Messages {
		if m.Role == wire.RoleTool {
			results = append(results, m.Content)
		}
	}
	if !slices.Contains(results, "391") || len(results) != 2 {
		t.Errorf("tool results = %q; want get_time's and calculate's 391", results)
	}
	if !strings.Contains(res.Text, "391") {
		t.Errorf("final answer %q does not report the calculation", res.Text)
	}

	// The auditor sees the same turn end.
	var types []string
	for {
		u, err := tap.Next(ctx)
		if err != nil {
			t.Fatalf("auditor: tap: %v; events so far %v", err, types)
		}
		types = append(types, u.Event.Type)
		if u.Event.Terminal() {
			break
		}
	}
	if types[len(types)-1] != wire.EventTurnCompleted || !slices.Contains(types, wire.EventToolDispatched) {
		t.Errorf("auditor saw %v; want tool dispatches and turn.completed last", types)
	}

	for _, c := range []*conn{wc, tc, ac, cc} {
		c.expectNoErrors(t)
	}
}

// TestHonestStepsRaiseNoRejection: in a turn whose two steps each call a
// tool, the second step's result reader also reads the first step's
// genuine result again (it starts before the dispatch); that is no
// forgery, and no tool.result-rejected event is recorded.
func TestHonestStepsRaiseNoRejection(t *testing.T) {
	setPasswords(t)
	srv := startServer(t, loadConfig(t, serverConf))
	url := srv.ClientURL()
	stackWith(t, url, mockllm.ScriptFunc(func(req *mockllm.Request) *mockllm.Response {
		tools := 0
		for _, m := range req.Messages {
			if m.Role == "tool" {
				tools++
			}
		}
		s := mockllm.NewStream("mock-1")
		if tools < 2 {
			s.Text("again. ").ToolCalls(7, mockllm.Call{ID: fmt.Sprintf("call_step%d", tools+1), Name: "get_time", Arguments: `{}`}).Finish("tool_calls").Usage(10, 10)
		} else {
			s.Text("done").Finish("stop").Usage(10, 1)
		}
		return s.Response()
	}))
	cl, err := client.New(connect(t, url, "client").Conn)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t)
	turn, err := cl.Submit(ctx, wire.TurnRequest{SessionID: "honest", TurnID: "t1",
		Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "the time, twice"}}, Tools: demotools.Tools()[:1]})
	if err != nil {
		t.Fatal(err)
	}
	res, err := turn.Wait(ctx)
	if err != nil || res.Terminal.Type != wire.EventTurnCompleted {
		t.Fatalf("turn = %+v, %v; want completed", res, err)
	}
	results := 0
	for _, e := range res.Events {
		switch e.Type {
		case wire.EventToolResultRejected:
			t.Errorf("an honest two-step turn recorded %s %v", e.Type, e.Payload)
		case wire.EventToolResult:
			results++
		}
	}
	if results != 2 {
		t.Errorf("tool.result events = %d; want one per step", results)
	}
}

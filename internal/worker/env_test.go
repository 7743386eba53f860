package worker_test

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/internal/worker"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// wait bounds every blocking step so a bug fails a test instead of hanging
// it; it is never a performance assertion.
const wait = 30 * time.Second

// env is one test's real parts: an embedded JetStream server, a mock
// provider behind real HTTP, and the workers and tool workers it starts.
type env struct {
	t    testing.TB
	srv  *natstest.Server
	nc   *nats.Conn
	js   jetstream.JetStream
	mock *mockllm.Server
	http *httptest.Server
	cfg  *config.Config
}

func newEnv(t testing.TB, script mockllm.Script) *env {
	t.Helper()
	srv := natstest.Start(t)
	nc, js := srv.JetStream()
	mock := mockllm.New(script)
	hs := httptest.NewServer(mock)
	t.Cleanup(hs.Close)
	cfg := config.Mock(hs.URL + "/v1")
	cfg.Worker.DrainTimeout = config.Duration(5 * time.Second)
	return &env{t: t, srv: srv, nc: nc, js: js, mock: mock, http: hs, cfg: cfg}
}

func testLog(t testing.TB) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
}

func ctxFor(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	t.Cleanup(cancel)
	return ctx
}

// running is a worker started by startWorker.
type running struct {
	w      *worker.Worker
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// stop stops the worker and waits for its drain. It is idempotent.
func (r *running) stop(t testing.TB) {
	t.Helper()
	r.once.Do(func() {
		r.cancel()
		select {
		case err := <-r.done:
			if err != nil {
				t.Errorf("Worker.Run() = %v; want nil", err)
			}
		case <-time.After(wait):
			t.Fatal("worker did not stop")
		}
	})
}

// startWorker runs a worker with its own connection until the test ends.
func (e *env) startWorker() *running { return e.startWorkerWith(nil) }

// startWorkerWith runs a worker whose options tweak adjusts (a clock, a
// logger).
func (e *env) startWorkerWith(tweak func(*worker.Options)) *running {
	e.t.Helper()
	o := worker.Options{Conn: e.srv.Connect(), Config: e.cfg, Log: testLog(e.t), HTTPClient: e.http.Client()}
	if tweak != nil {
		tweak(&o)
	}
	w, err := worker.New(ctxFor(e.t), o)
	if err != nil {
		e.t.Fatalf("worker.New() = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{w: w, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- w.Run(ctx) }()
	e.t.Cleanup(func() { r.stop(e.t) })
	return r
}

// serveTools runs a tool worker until the test ends.
func (e *env) serveTools(handlers map[string]toolworker.Handler, opts ...toolworker.Option) {
	e.t.Helper()
	nc := e.srv.Connect()
	js, err := jetstream.New(nc)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := toolworker.Serve(ctx, js, handlers, append([]toolworker.Option{toolworker.WithLogger(testLog(e.t))}, opts...)...); err != nil {
			e.t.Errorf("toolworker.Serve() = %v", err)
		}
	}()
	e.t.Cleanup(func() { cancel(); <-done })
}

func (e *env) client(opts ...client.Option) *client.Client {
	e.t.Helper()
	c, err := client.New(e.nc, opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// echoTool answers with its name and arguments.
func echoTool(name string) toolworker.Handler {
	return func(_ context.Context, call wire.ToolCall) (toolworker.Result, error) {
		return toolworker.Result{Content: name + " got " + call.Arguments}, nil
	}
}

func tool(name string) wire.Tool {
	return wire.Tool{Name: name, Description: "test tool " + name, Parameters: map[string]any{
		"type":       "object",
		"properties": map[string]any{"q": map[string]any{"type": "string", "default": "x-" + name}},
	}}
}

// records reads every record stored on subject of stream, decoded into T.
func records[T any](t testing.TB, js jetstream.JetStream, stream, subject string) ([]T, []jetstream.Msg) {
	t.Helper()
	msgs := stored(t, js, stream, subject)
	var out []T
	for _, m := range msgs {
		var v T
		if err := wire.Decode(m.Headers().Get(wire.HeaderContentType), m.Data(), &v); err != nil {
			t.Fatalf("decode %s record: %v", subject, err)
		}
		out = append(out, v)
	}
	return out, msgs
}

// stored reads every record stored on subject of stream, as it is.
func stored(t testing.TB, js jetstream.JetStream, stream, subject string) []jetstream.Msg {
	t.Helper()
	ctx := ctxFor(t)
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatalf("Stream(%s) = %v", stream, err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatal(err)
	}
	var want uint64
	for _, n := range info.State.Subjects {
		want += n
	}
	if want == 0 {
		return nil
	}
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		t.Fatal(err)
	}
	it, err := cons.Messages()
	if err != nil {
		t.Fatal(err)
	}
	defer it.Stop()
	var msgs []jetstream.Msg
	for uint64(len(msgs)) < want {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			t.Fatalf("reading %s: %v", subject, err)
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// rawFrames reads every raw frame stored on TURN_RAW for a turn, in order.
func rawFrames(t testing.TB, js jetstream.JetStream, session, turn string) []wire.RawFrame {
	t.Helper()
	subject := wire.Subjects{}.Raw(session, turn)
	var out []wire.RawFrame
	for _, m := range stored(t, js, wire.StreamRaw, subject) {
		f, err := wire.Subjects{}.ParseRawFrame(m.Subject(), m.Headers(), m.Data())
		if err != nil {
			t.Fatalf("raw frame on %s: %v", subject, err)
		}
		out = append(out, f)
	}
	return out
}

// waitTerminal reads the session's events until one ends turn.
func waitTerminal(t testing.TB, js jetstream.JetStream, session, turn string) wire.SessionEvent {
	t.Helper()
	ctx := ctxFor(t)
	s, err := js.Stream(ctx, wire.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{wire.Subjects{}.Event(session)}})
	if err != nil {
		t.Fatal(err)
	}
	it, err := cons.Messages()
	if err != nil {
		t.Fatal(err)
	}
	defer it.Stop()
	for {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			t.Fatalf("waiting for the terminal event of %s/%s: %v", session, turn, err)
		}
		var ev wire.SessionEvent
		if err := wire.Decode(m.Headers().Get(wire.HeaderContentType), m.Data(), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.TurnID == turn && ev.Terminal() {
			return ev
		}
	}
}

func countTypes(evs []wire.SessionEvent) map[string]int {
	n := map[string]int{}
	for _, e := range evs {
		n[e.Type]++
	}
	return n
}

// eventually polls cond until it holds, failing the test after wait. It
// waits for an asynchronous effect; it never asserts how long it took.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

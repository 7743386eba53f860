package turn_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/calltoken"
	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaichat"
	"github.com/turnstream/turnstream/internal/turn"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// wait bounds every blocking step so a bug fails a test instead of hanging
// it; it is never a performance assertion.
const wait = 30 * time.Second

// testKey stands in for the fleet key workers read from TURN_STATE.
var testKey = func() calltoken.Key {
	k, err := calltoken.NewKey([]byte("turn tests' call-token fleet key"))
	if err != nil {
		panic(err)
	}
	return k
}()

// env is a real embedded JetStream server with the topology the workers
// create, and the bus a turn writes through.
type env struct {
	t   *testing.T
	nc  *nats.Conn
	js  jetstream.JetStream
	bus *bus.Bus
}

func newEnv(t *testing.T) *env {
	t.Helper()
	srv := natstest.Start(t)
	nc, js := srv.JetStream()
	ctx := ctxFor(t)
	if err := (bus.Topology{}).Ensure(ctx, js); err != nil {
		t.Fatalf("Topology.Ensure() = %v", err)
	}
	b, err := bus.New(ctx, js, wire.Subjects{Prefix: wire.DefaultPrefix})
	if err != nil {
		t.Fatalf("bus.New() = %v", err)
	}
	return &env{t: t, nc: nc, js: js, bus: b}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	t.Cleanup(cancel)
	return ctx
}

func testLog(t *testing.T) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
}

// serveTools runs a tool worker (the real SDK) until the test ends.
func (e *env) serveTools(handlers map[string]toolworker.Handler) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := toolworker.Serve(ctx, e.js, handlers, toolworker.WithLogger(testLog(e.t))); err != nil {
			e.t.Errorf("toolworker.Serve() = %v", err)
		}
	}()
	e.t.Cleanup(func() { cancel(); <-done })
}

// script is a provider that answers each call with the next response.
type script struct {
	mu        sync.Mutex
	responses []*assemble.Response
	calls     int
}

func (s *script) Execute(_ context.Context, chain []provider.Target, _ *provider.Request, _ provider.Observer) (*provider.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	resp := s.responses[min(s.calls, len(s.responses)-1)]
	s.calls++
	return &provider.Result{
		Response: resp, Target: chain[0], API: openaichat.API.Name,
		Model:    provider.Model{Name: chain[0].Model, ContextTokens: 100_000},
		Attempts: []provider.Attempt{{Number: 1, Target: chain[0]}},
	}, nil
}

// callThenAnswer is a provider that calls one tool, then answers.
func callThenAnswer(tool, args string) *script {
	return &script{responses: []*assemble.Response{
		{ToolCalls: []assemble.ToolCall{{Index: 0, ProviderID: "call_1", Name: tool, Arguments: args, Complete: true}},
			FinishReason: wire.FinishToolCalls, Terminal: true},
		{Text: "done", FinishReason: wire.FinishStop, Terminal: true},
	}}
}

type routes struct{}

func (routes) Chain(string) ([]provider.Target, error) {
	return []provider.Target{{Provider: "p", Model: "m"}}, nil
}

func (routes) ContextTokens(string) int { return 100_000 }

// run drives one turn through the loop to its end, writing to the real
// streams, and returns its outcome.
func (e *env) run(loop *turn.Loop, codec wire.Codec, req *wire.TurnRequest) turn.Outcome {
	e.t.Helper()
	ctx := ctxFor(e.t)
	loop.Routes = routes{}
	loop.Budgets = config.Budgets{BudgetValues: config.BudgetValues{
		MaxIterations: 4, MaxToolCalls: 4, MaxRepeatedToolFailures: 2, WallClock: config.Duration(wait),
	}, Ceiling: config.BudgetValues{MaxIterations: 4, MaxToolCalls: 4, MaxRepeatedToolFailures: 2, WallClock: config.Duration(wait)}}
	loop.ToolTimeout = wait
	loop.CallKey = testKey
	loop.Log = testLog(e.t)
	log, err := e.bus.LoadLog(ctx, req.SessionID)
	if err != nil {
		e.t.Fatalf("LoadLog() = %v", err)
	}
	out := loop.Run(ctx, turn.Input{
		Request: req, Log: log.Messages, Stored: log.Stored, Delivery: 1,
		Writer: e.bus.Turn(req.SessionID, req.TurnID, codec, log),
		OpenResults: func(ctx context.Context, from turn.ResultsFrom) (turn.Results, error) {
			f, err := e.bus.FollowResults(ctx, req.SessionID, from.After, from.Since)
			if err != nil {
				return nil, err
			}
			return results{f}, nil
		},
	})
	if out.Err != nil {
		e.t.Fatalf("Run() error = %v", out.Err)
	}
	return out
}

type results struct{ f *bus.ResultFollower }

func (r results) Next(ctx context.Context) (wire.ToolResult, error) {
	for {
		rec, err := r.f.Next(ctx)
		if err != nil {
			return wire.ToolResult{}, err
		}
		if rec.Err == nil {
			return rec.Result, nil
		}
	}
}

func (r results) Stop() { r.f.Stop() }

// sessionLog reads a session's stored messages with their encoded size.
func (e *env) sessionLog(session string) ([]wire.Message, []int) {
	e.t.Helper()
	msgs, raw := records[wire.Message](e.t, e.js, wire.StreamMessages, wire.Subjects{Prefix: wire.DefaultPrefix}.Message(session))
	sizes := make([]int, len(raw))
	for i, m := range raw {
		sizes[i] = len(m.Data())
	}
	return msgs, sizes
}

// events reads a session's stored events.
func (e *env) events(session string) []wire.SessionEvent {
	e.t.Helper()
	evs, _ := records[wire.SessionEvent](e.t, e.js, wire.StreamEvents, wire.Subjects{Prefix: wire.DefaultPrefix}.Event(session))
	return evs
}

// records reads every record stored on subject, decoded by Content-Type.
func records[T any](t *testing.T, js jetstream.JetStream, stream, subject string) ([]T, []jetstream.Msg) {
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

// stored reads every record stored on subject, as it is.
func stored(t *testing.T, js jetstream.JetStream, stream, subject string) []jetstream.Msg {
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
	want := info.State.Subjects[subject]
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

// toolMessage is the tool message of a session log answering callID's
// call, the only one.
func toolMessage(t *testing.T, msgs []wire.Message) (wire.Message, int) {
	t.Helper()
	for i, m := range msgs {
		if m.Role == wire.RoleTool {
			return m, i
		}
	}
	t.Fatalf("no tool message in the session log (%d messages)", len(msgs))
	return wire.Message{}, -1
}

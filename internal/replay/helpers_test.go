package replay_test

import (
	"bytes"
	"context"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/internal/replay"
	"github.com/turnstream/turnstream/internal/worker"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// wait bounds every blocking step so a bug fails a test instead of hanging
// it; it is never a performance assertion.
const wait = 60 * time.Second

func ctxFor(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	t.Cleanup(cancel)
	return ctx
}

func testLog(t testing.TB) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
}

// live is the server a turn is recorded on: real NATS, a real worker, a
// real tool worker and the mock provider behind real HTTP. Recording stops
// the worker and the tool worker, so nothing but a replay could touch the
// streams after it.
type live struct {
	t    *testing.T
	srv  *natstest.Server
	nc   *nats.Conn
	js   jetstream.JetStream
	mock *mockllm.Server
	// cfg is the live worker's config.
	cfg *config.Config
	// toolRuns counts the runs of the live tool.
	toolRuns atomic.Int64
	stop     func()
}

// lookupTool is the tool the recorded turns offer.
var lookupTool = wire.Tool{Name: "lookup", Description: "looks a city up", Parameters: map[string]any{
	"type":       "object",
	"properties": map[string]any{"city": map[string]any{"type": "string", "default": "Paris"}},
	"required":   []any{"city"},
}}

func startLive(t *testing.T) *live {
	t.Helper()
	l := &live{t: t, srv: natstest.Start(t), mock: mockllm.New(mockllm.Default(mockllm.DefaultOptions{Split: 3}))}
	l.nc, l.js = l.srv.JetStream()
	hs := httptest.NewServer(l.mock)
	t.Cleanup(hs.Close)
	cfg := config.Mock(hs.URL + "/v1")
	cfg.Worker.DrainTimeout = config.Duration(5 * time.Second)
	l.cfg = cfg
	w, err := worker.New(ctxFor(t), worker.Options{Conn: l.srv.Connect(), Config: cfg, Log: testLog(t), HTTPClient: hs.Client()})
	if err != nil {
		t.Fatalf("worker.New() = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- w.Run(ctx) }()
	tjs, err := jetstream.New(l.srv.Connect())
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(_ context.Context, call wire.ToolCall) (toolworker.Result, error) {
		l.toolRuns.Add(1)
		return toolworker.Result{Content: "sunny, 21°C; asked " + call.Arguments}, nil
	}
	go func() {
		done <- toolworker.Serve(ctx, tjs, map[string]toolworker.Handler{"lookup": lookup}, toolworker.WithLogger(testLog(t)))
	}()
	stopped := false
	l.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		for range 2 {
			if err := <-done; err != nil {
				t.Errorf("live worker or tool worker stopped with %v", err)
			}
		}
	}
	t.Cleanup(l.stop)
	return l
}

// turn runs one turn to its end on the live stack.
func (l *live) turn(session, turnID, prompt string, tools ...wire.Tool) {
	l.t.Helper()
	c, err := client.New(l.nc)
	if err != nil {
		l.t.Fatal(err)
	}
	ctx := ctxFor(l.t)
	tr, err := c.Submit(ctx, wire.TurnRequest{
		SessionID: session, TurnID: turnID, System: "You answer briefly.",
		Input: []wire.InputMessage{{Role: wire.RoleUser, Content: prompt}},
		Tools: tools,
	})
	if err != nil {
		l.t.Fatalf("Submit() = %v", err)
	}
	defer tr.Close()
	res, err := tr.Wait(ctx)
	if err != nil {
		l.t.Fatalf("Wait() = %v", err)
	}
	if res.Terminal.Type != wire.EventTurnCompleted {
		l.t.Fatalf("recorded turn %s ended %s %v; want %s", turnID, res.Terminal.Type, res.Terminal.Payload, wire.EventTurnCompleted)
	}
}

// streamStates is what every stream of the live server holds, by stream:
// messages and last sequence.
func (l *live) streamStates() map[string][2]uint64 {
	l.t.Helper()
	ctx := ctxFor(l.t)
	out := map[string][2]uint64{}
	names := l.js.StreamNames(ctx)
	for name := range names.Name() {
		s, err := l.js.Stream(ctx, name)
		if err != nil {
			l.t.Fatal(err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			l.t.Fatal(err)
		}
		out[name] = [2]uint64{info.State.Msgs, info.State.LastSeq}
	}
	if err := names.Err(); err != nil {
		l.t.Fatal(err)
	}
	return out
}

// replayTurn replays a turn of the live server, with cfg as the
// recording workers' config (nil: none), and returns what it printed, its
// report and its error.
func (l *live) replayTurn(cfg *config.Config, session, turnID string) (string, *replay.Report, error) {
	l.t.Helper()
	var out bytes.Buffer
	rep, err := replay.Run(ctxFor(l.t), replay.Options{Conn: l.nc, Config: cfg, Session: session, Turn: turnID, Out: &out, Log: testLog(l.t)})
	return out.String(), rep, err
}

// startEmpty starts a server without turnstream's streams and connects to
// it.
func startEmpty(t *testing.T) *nats.Conn {
	t.Helper()
	nc, _ := natstest.Start(t).JetStream()
	return nc
}

// tamperLastMessage rewrites the last message of a session's log, as
// stored: it is deleted, and edit's copy appended in its place.
func tamperLastMessage(t *testing.T, l *live, session string, edit func(*wire.Message)) {
	t.Helper()
	ctx := ctxFor(t)
	s, err := l.js.Stream(ctx, wire.StreamMessages)
	if err != nil {
		t.Fatal(err)
	}
	subject := wire.Subjects{}.Message(session)
	last, err := s.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		t.Fatal(err)
	}
	var m wire.Message
	if err := wire.Decode(last.Header.Get(wire.HeaderContentType), last.Data, &m); err != nil {
		t.Fatal(err)
	}
	edit(&m)
	data, err := wire.JSON.Marshal(&m)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMsg(ctx, last.Sequence); err != nil {
		t.Fatal(err)
	}
	if _, err := l.js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: data, Header: nats.Header{wire.HeaderContentType: {wire.ContentTypeJSON}}}); err != nil {
		t.Fatal(err)
	}
}

// deleteLastEvent deletes the last event of a session (a turn's terminal
// event), as if its turn were still running.
func deleteLastEvent(t *testing.T, l *live, session string) {
	t.Helper()
	ctx := ctxFor(t)
	s, err := l.js.Stream(ctx, wire.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	last, err := s.GetLastMsgForSubject(ctx, wire.Subjects{}.Event(session))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMsg(ctx, last.Sequence); err != nil {
		t.Fatal(err)
	}
}

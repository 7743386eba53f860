package turn_test

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaichat"
	"github.com/turnstream/turnstream/internal/turn"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// frameExec relays its frames through the observer, as a wire adapter's
// executor does, and keeps what each relay returned; then it answers.
type frameExec struct {
	frames []provider.Frame
	errs   []error
}

func (x *frameExec) Execute(_ context.Context, chain []provider.Target, _ *provider.Request, obs provider.Observer) (*provider.Result, error) {
	for _, f := range x.frames {
		x.errs = append(x.errs, obs.Frame(1, chain[0], f))
	}
	return &provider.Result{
		Response: &assemble.Response{Text: "hi", FinishReason: wire.FinishStop, Terminal: true},
		Target:   chain[0], API: openaichat.API.Name,
		Model:    provider.Model{Name: chain[0].Model, ContextTokens: 100_000},
		Attempts: []provider.Attempt{{Number: 1, Target: chain[0]}},
	}, nil
}

// TestFramesSplitIntoChunksAndRawFrames: each frame becomes its chunk on
// TURN_CHUNKS (the normalized delta only, one per frame even when the
// delta is empty) and its raw frame on TURN_RAW (the provider's bytes as
// they arrived), under the same step, attempt and seq. A frame whose bytes
// the server cannot take fails the attempt as RESPONSE_TOO_LARGE and gets
// no chunk either.
func TestFramesSplitIntoChunksAndRawFrames(t *testing.T) {
	e := newEnv(t)
	ctx := ctxFor(t)
	st, err := e.bus.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := []byte(`{"choices":[{"delta":{"content":"hi","reasoning_content":"secret thoughts"}}]}`)
	exec := &frameExec{frames: []provider.Frame{
		{Raw: first, Delta: &wire.Delta{Text: "hi"}},
		{Raw: []byte("[DONE]"), Event: "done"},
		{Raw: bytes.Repeat([]byte("x"), int(e.nc.MaxPayload()))},
	}}
	bv := config.BudgetValues{MaxIterations: 4, MaxToolCalls: 4, MaxRepeatedToolFailures: 2, WallClock: config.Duration(wait)}
	loop := &turn.Loop{Exec: exec, State: st, Routes: routes{}, ToolTimeout: time.Second, Log: testLog(t), Budgets: config.Budgets{BudgetValues: bv, Ceiling: bv}}
	req := &wire.TurnRequest{SessionID: "s1", TurnID: "t1", Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "go"}}}
	log, err := e.bus.LoadLog(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	loop.Run(ctx, turn.Input{Request: req, Log: log.Messages, Stored: log.Stored, Delivery: 1, Writer: e.bus.Turn("s1", "t1", wire.JSON, log),
		OpenResults: func(ctx context.Context, from turn.ResultsFrom) (turn.Results, error) {
			f, err := e.bus.FollowResults(ctx, "s1", from.After, from.Since)
			if err != nil {
				return nil, err
			}
			return results{f}, nil
		}})

	if len(exec.errs) != 3 || exec.errs[0] != nil || exec.errs[1] != nil {
		t.Fatalf("Frame() errors = %v; want nil for the first two frames", exec.errs)
	}
	var f *provider.Failure
	if err := exec.errs[2]; !errors.As(err, &f) || f.Class != provider.ClassResponseTooLarge || f.Reason != provider.LimitFrameBytes || !errors.Is(err, wire.ErrRecordTooLarge) {
		t.Errorf("Frame(frame of max payload) = %v; want RESPONSE_TOO_LARGE frame_bytes wrapping wire.ErrRecordTooLarge", err)
	}

	chain, _ := routes{}.Chain("")
	want := []wire.RawFrame{
		{SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 1, Seq: 1, Provider: chain[0].Provider, Model: chain[0].Model, Bytes: first},
		{SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 1, Seq: 2, Provider: chain[0].Provider, Model: chain[0].Model, Event: "done", Bytes: []byte("[DONE]")},
	}
	var raws []wire.RawFrame
	for _, m := range stored(t, e.js, wire.StreamRaw, wire.Subjects{}.Raw("s1", "t1")) {
		rf, err := wire.Subjects{}.ParseRawFrame(m.Subject(), m.Headers(), m.Data())
		if err != nil {
			t.Fatalf("ParseRawFrame(stored) = %v", err)
		}
		raws = append(raws, rf)
	}
	if !reflect.DeepEqual(raws, want) {
		t.Errorf("raw frames =\n%+v\nwant\n%+v", raws, want)
	}

	chunks, chunkMsgs := records[wire.Chunk](t, e.js, wire.StreamChunks, wire.Subjects{}.Chunk("s1", "t1"))
	var frames []wire.Chunk
	for _, c := range chunks {
		if c.Marker == "" {
			frames = append(frames, c)
		}
	}
	wantChunks := []wire.Chunk{
		{SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 1, Seq: 1, Provider: chain[0].Provider, Model: chain[0].Model, Delta: &wire.Delta{Text: "hi"}},
		{SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 1, Seq: 2, Provider: chain[0].Provider, Model: chain[0].Model, Event: "done"},
	}
	if !reflect.DeepEqual(frames, wantChunks) {
		t.Errorf("frame chunks =\n%+v\nwant\n%+v", frames, wantChunks)
	}
	for _, m := range chunkMsgs {
		if bytes.Contains(m.Data(), []byte("secret thoughts")) || bytes.Contains(m.Data(), []byte(`"raw`)) {
			t.Errorf("chunk %s carries the provider's bytes", m.Data())
		}
	}
}

// cancelledStep relays its frames through the observer while link holds
// back the acks of the writer's connection, then the turn is cancelled (a
// client's cancel arriving while the step's acks are in flight), and it
// answers all the same. The first state write after it (the step's
// record) lets the acks through.
type cancelledStep struct {
	frames []provider.Frame
	link   *natstest.Link
	cancel context.CancelCauseFunc
	called atomic.Bool
}

func (x *cancelledStep) Execute(_ context.Context, chain []provider.Target, _ *provider.Request, obs provider.Observer) (*provider.Result, error) {
	x.link.Hold()
	x.called.Store(true)
	for _, f := range x.frames {
		if err := obs.Frame(1, chain[0], f); err != nil {
			return nil, err
		}
	}
	x.cancel(turn.ErrCancelled)
	return &provider.Result{
		Response: &assemble.Response{Text: "hi", FinishReason: wire.FinishStop, Terminal: true},
		Target:   chain[0], API: openaichat.API.Name,
		Model:    provider.Model{Name: chain[0].Model, ContextTokens: 100_000},
		Attempts: []provider.Attempt{{Number: 1, Target: chain[0]}},
	}, nil
}

// releasing is a turn's state store that releases the step's link at its
// first write after the step's call.
type releasing struct {
	turn.StateStore
	step *cancelledStep
}

func (r releasing) Put(ctx context.Context, key string, value []byte) error {
	if r.step.called.Load() {
		r.step.link.Release()
	}
	return r.StateStore.Put(ctx, key, value)
}

// TestRefusedFrameFailsTheDelivery: a raw frame the server refuses fails
// the turn's delivery (no terminal event, the outcome's error is the
// refusal), even when the turn's context ended while the step's acks were
// in flight. (The step's Flush, cut short by the cancellation, used to
// forget the acks it had not reached, and the turn then ended as
// completed over the refused frame.)
func TestRefusedFrameFailsTheDelivery(t *testing.T) {
	e := newEnv(t)
	ctx := ctxFor(t)
	raw, err := e.js.Stream(ctx, wire.StreamRaw)
	if err != nil {
		t.Fatal(err)
	}
	cfg := raw.CachedInfo().Config // one raw frame per turn: the second is refused
	cfg.MaxMsgsPerSubject, cfg.Discard, cfg.DiscardNewPerSubject = 1, jetstream.DiscardNew, true
	if _, err := e.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	// The writer's connection goes through a link that can hold its acks
	// back; the state is written on the direct one.
	link := natstest.NewLink(t, e.nc.ConnectedUrl())
	wnc, err := nats.Connect(link.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wnc.Close)
	wjs, err := jetstream.New(wnc)
	if err != nil {
		t.Fatal(err)
	}
	wbus, err := bus.New(ctx, wjs, wire.Subjects{Prefix: wire.DefaultPrefix})
	if err != nil {
		t.Fatal(err)
	}
	st, err := e.bus.State(ctx)
	if err != nil {
		t.Fatal(err)
	}

	turnCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	exec := &cancelledStep{link: link, cancel: cancel, frames: []provider.Frame{
		{Raw: []byte(`{"choices":[{"delta":{"content":"hi"}}]}`), Delta: &wire.Delta{Text: "hi"}},
		{Raw: []byte("[DONE]"), Event: "done"},
	}}
	bv := config.BudgetValues{MaxIterations: 4, MaxToolCalls: 4, MaxRepeatedToolFailures: 2, WallClock: config.Duration(wait)}
	loop := &turn.Loop{Exec: exec, State: releasing{StateStore: st, step: exec}, Routes: routes{}, ToolTimeout: time.Second,
		Log: testLog(t), Budgets: config.Budgets{BudgetValues: bv, Ceiling: bv}}
	req := &wire.TurnRequest{SessionID: "s1", TurnID: "t1", Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "go"}}}
	out := loop.Run(turnCtx, turn.Input{Request: req, Delivery: 1, Writer: wbus.Turn("s1", "t1", wire.JSON, nil)})

	var apiErr *jetstream.APIError
	if !errors.As(out.Err, &apiErr) || out.Status != "" {
		t.Errorf("Run() = %+v; want the refused raw frame's error and no status", out)
	}
	for _, ev := range e.events("s1") {
		if ev.Type == wire.EventTurnCompleted || ev.Type == wire.EventTurnFailed {
			t.Errorf("terminal event %s stored over a refused raw frame", ev.Type)
		}
	}
}

// stepsSeen is an executor wrapping another, as a metrics or tracing
// wrapper does, that keeps the Step and Route of each observer it is given.
type stepsSeen struct {
	next   turn.Executor
	steps  []int
	routes []string
}

func (x *stepsSeen) Execute(ctx context.Context, chain []provider.Target, req *provider.Request, obs provider.Observer) (*provider.Result, error) {
	if s, ok := obs.(interface {
		Step() int
		Route() string
	}); ok {
		x.steps, x.routes = append(x.steps, s.Step()), append(x.routes, s.Route())
	}
	return x.next.Execute(ctx, chain, req, obs)
}

// TestObserverNamesItsStepAndRoute: the observer of each step's execution
// says which step it is and which route the request named, for an
// executor that wraps the loop's.
func TestObserverNamesItsStepAndRoute(t *testing.T) {
	e := newEnv(t)
	e.serveTools(map[string]toolworker.Handler{"lookup": func(context.Context, wire.ToolCall) (toolworker.Result, error) {
		return toolworker.Result{Content: "ok"}, nil
	}})
	exec := &stepsSeen{next: callThenAnswer("lookup", `{}`)}
	out := e.run(&turn.Loop{Exec: exec}, wire.JSON, &wire.TurnRequest{
		SessionID: "s1", TurnID: "t1", Route: "fast",
		Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "go"}},
		Tools: []wire.Tool{{Name: "lookup", Parameters: map[string]any{"type": "object"}}},
	})
	if out.Status != wire.EventTurnCompleted {
		t.Fatalf("Run() = %+v; want completed", out)
	}
	if !reflect.DeepEqual(exec.steps, []int{1, 2}) || !reflect.DeepEqual(exec.routes, []string{"fast", "fast"}) {
		t.Errorf("observers named steps %v, routes %v; want [1 2], [fast fast]", exec.steps, exec.routes)
	}
}

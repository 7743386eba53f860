package worker_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestResumeAfterWorkerStops: a worker stops while the turn waits for its
// tools; another worker resumes the turn from the session log: the input is
// not appended again, no tool runs twice, no message is written twice.
func TestResumeAfterWorkerStops(t *testing.T) {
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{}))
	e.cfg.Worker.DrainTimeout = config.Duration(100 * time.Millisecond)
	release := make(chan struct{})
	var calls atomic.Int32
	called := make(chan struct{}, 4)
	slow := func(ctx context.Context, call wire.ToolCall) (toolworker.Result, error) {
		calls.Add(1)
		called <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
			return toolworker.Result{}, ctx.Err()
		}
		return toolworker.Result{Content: "slow done"}, nil
	}
	e.serveTools(map[string]toolworker.Handler{"slow": slow})
	first := e.startWorker()
	ctx := ctxFor(t)
	turn, err := e.client().Submit(ctx, wire.TurnRequest{SessionID: "resume", TurnID: "t1",
		Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "go slow"}}, Tools: []wire.Tool{tool("slow")}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-called:
	case <-ctx.Done():
		t.Fatal("the tool was never called")
	}
	first.stop(t) // mid-turn: the worker hands the turn back
	e.startWorker()
	close(release)

	res, err := turn.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Terminal.Type != wire.EventTurnCompleted {
		t.Fatalf("terminal = %s %v; want completed", res.Terminal.Type, res.Terminal.Payload)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("tool ran %d times; want 1", n)
	}
	log, _ := records[wire.Message](t, e.js, wire.StreamMessages, "turn.message.resume")
	roles := ""
	for _, m := range log {
		roles += string(m.Role) + " "
	}
	if want := "user assistant tool assistant "; roles != want {
		t.Errorf("session log roles = %q; want %q", roles, want)
	}
	if len(log) == 4 && (log[2].Content != "slow done" || log[2].Synthesized) {
		t.Errorf("tool result = %+v; want the real result", log[2])
	}
	events, _ := records[wire.SessionEvent](t, e.js, wire.StreamEvents, "turn.event.resume")
	var resumed bool
	for _, ev := range events {
		if ev.Type == wire.EventTurnAccepted && ev.Payload["resumed"] == true {
			resumed = true
		}
	}
	if n := countTypes(events); n[wire.EventTurnAccepted] != 2 || !resumed || n[wire.EventTurnCompleted] != 1 || n[wire.EventTurnFailed] != 0 {
		t.Errorf("events = %v (resumed %v); want two acceptances, the second resumed, and one completion", n, resumed)
	}
}

// TestSameTurnRunsOnce: a turn id submitted twice runs once, whether the
// second submission falls in JetStream's dedupe window or not.
func TestSameTurnRunsOnce(t *testing.T) {
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{}))
	e.startWorker()
	ctx := ctxFor(t)
	req := wire.TurnRequest{SessionID: "dup", TurnID: "t1", Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "once"}}}
	c := e.client()
	first, err := c.Submit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Submit(ctx, req); err != nil { // same Nats-Msg-Id: deduplicated
		t.Fatal(err)
	}
	if res, err := first.Wait(ctx); err != nil || res.Terminal.Type != wire.EventTurnCompleted {
		t.Fatalf("first = %v, %v; want completed", res, err)
	}
	// Outside the dedupe window: another message id, the same turn id.
	m := &nats.Msg{Subject: "turn.submit.dup", Data: []byte(`{"session_id":"dup","turn_id":"t1","input":[{"role":"user","content":"once"}]}`), Header: nats.Header{}}
	m.Header.Set(jetstream.MsgIDHeader, "another-id")
	dup, err := e.js.PublishMsg(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := e.js.Consumer(ctx, wire.StreamSubmit, "turn-workers")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the resubmission is settled", func() bool {
		ci, err := cons.Info(ctx)
		return err == nil && ci.NumPending == 0 && ci.NumAckPending == 0
	})
	events, _ := records[wire.SessionEvent](t, e.js, wire.StreamEvents, "turn.event.dup")
	if n := countTypes(events); n[wire.EventTurnAccepted] != 1 || n[wire.EventTurnCompleted] != 1 || n[wire.EventTurnDuplicate] != 1 {
		t.Errorf("events = %v; want the turn accepted and completed once, and one turn.duplicate", n)
	}
	// The resubmission is reported, naming the turn and the request it
	// duplicates.
	for _, ev := range events {
		if ev.Type != wire.EventTurnDuplicate {
			continue
		}
		first, _ := ev.Payload["first_seq"].(float64)
		if ev.TurnID != "t1" || ev.Payload["seq"] != float64(dup.Sequence) || first == 0 || uint64(first) >= dup.Sequence {
			t.Errorf("turn.duplicate = %+v; want turn t1, seq %d and the first request's seq", ev, dup.Sequence)
		}
	}
	log, _ := records[wire.Message](t, e.js, wire.StreamMessages, "turn.message.dup")
	if len(log) != 2 {
		t.Errorf("session log has %d messages; want 2", len(log))
	}
	if n := len(e.mock.Requests()); n != 1 {
		t.Errorf("provider calls = %d; want 1", n)
	}
}

// TestToolWithoutResult: a call nobody answers before its deadline gets an
// explicit, synthesized error result and a tool.repaired event; the turn
// goes on.
func TestToolWithoutResult(t *testing.T) {
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{}))
	e.cfg.Worker.ToolTimeout = config.Duration(300 * time.Millisecond)
	e.startWorker() // no tool worker serves "ghost"
	ctx := ctxFor(t)
	turn, err := e.client().Submit(ctx, wire.TurnRequest{SessionID: "ghost", TurnID: "t1",
		Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "call the ghost"}}, Tools: []wire.Tool{tool("ghost")}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := turn.Wait(ctx)
	if err != nil || res.Terminal.Type != wire.EventTurnCompleted {
		t.Fatalf("Wait() = %+v, %v; want completed", res, err)
	}
	var result *wire.Message
	for i := range res.Messages {
		if res.Messages[i].Role == wire.RoleTool {
			result = &res.Messages[i]
		}
	}
	if result == nil || !result.Synthesized || !result.IsError || result.ToolCallID != res.Messages[1].ToolCalls[0].ID {
		t.Fatalf("tool message = %+v; want a synthesized error result for the call", result)
	}
	if n := countTypes(res.Events); n[wire.EventToolRepaired] != 1 {
		t.Errorf("events = %v; want one tool.repaired", n)
	}
}

// TestCancel: a cancel request stops a streaming turn, which ends with
// turn.failed reason cancelled; a cancelled turn waiting on tools leaves
// every call with an explicit result.
func TestCancel(t *testing.T) {
	long := mockllm.NewStream("mock-1")
	for range 200 {
		long.Text("word ")
	}
	long.Finish("stop")
	slowText := long.Response()
	slowText.Latency = 20 * time.Millisecond

	var mu sync.Mutex
	e := newEnv(t, mockllm.ScriptFunc(func(req *mockllm.Request) *mockllm.Response {
		mu.Lock()
		defer mu.Unlock()
		if len(req.Tools) > 0 {
			return mockllm.Default(mockllm.DefaultOptions{}).Respond(req)
		}
		return slowText
	}))
	e.startWorker()
	c := e.client()

	t.Run("while streaming", func(t *testing.T) {
		ctx := ctxFor(t)
		turn, err := c.Submit(ctx, wire.TurnRequest{SessionID: "cancel1", TurnID: "t1", Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "talk"}}})
		if err != nil {
			t.Fatal(err)
		}
		waitChunk(ctx, t, turn)
		if err := c.Cancel(ctx, "cancel1", ""); err != nil {
			t.Fatal(err)
		}
		res, err := turn.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.Terminal.Type != wire.EventTurnFailed || res.Terminal.Payload["reason"] != "cancelled" {
			t.Errorf("terminal = %s %v; want turn.failed cancelled", res.Terminal.Type, res.Terminal.Payload)
		}
	})

	t.Run("while waiting for tools", func(t *testing.T) {
		ctx := ctxFor(t)
		turn, err := c.Submit(ctx, wire.TurnRequest{SessionID: "cancel2", TurnID: "t1",
			Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "call"}}, Tools: []wire.Tool{tool("ghost")}})
		if err != nil {
			t.Fatal(err)
		}
		var calls []wire.Call
		for len(calls) == 0 {
			u, err := turn.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if u.Message != nil {
				calls = u.Message.ToolCalls
			}
		}
		if err := c.Cancel(ctx, "cancel2", "t1"); err != nil {
			t.Fatal(err)
		}
		res, err := turn.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.Terminal.Type != wire.EventTurnFailed || res.Terminal.Payload["reason"] != "cancelled" {
			t.Errorf("terminal = %s %v; want turn.failed cancelled", res.Terminal.Type, res.Terminal.Payload)
		}
		log, _ := records[wire.Message](t, e.js, wire.StreamMessages, "turn.message.cancel2")
		last := log[len(log)-1]
		if last.Role != wire.RoleTool || last.ToolCallID != calls[0].ID || !last.Synthesized || !last.IsError {
			t.Errorf("last message = %+v; want a synthesized error result for %s", last, calls[0].ID)
		}
	})
}

func waitChunk(ctx context.Context, t *testing.T, turn *client.Turn) {
	t.Helper()
	for {
		u, err := turn.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if u.Chunk != nil && u.Chunk.Delta != nil && u.Chunk.Delta.Text != "" {
			return
		}
	}
}

// TestResumeMidStream: a worker stops while the provider is streaming; the
// next worker redoes the step as a new attempt, numbered after the first
// one's chunks, and writes the answer once.
func TestResumeMidStream(t *testing.T) {
	slow := mockllm.NewStream("mock-1")
	for range 100 {
		slow.Text("word ")
	}
	slow.Finish("stop")
	resp := slow.Response()
	resp.Latency = 10 * time.Millisecond
	e := newEnv(t, mockllm.ScriptFunc(func(*mockllm.Request) *mockllm.Response { return resp }))
	e.cfg.Worker.DrainTimeout = config.Duration(50 * time.Millisecond)
	first := e.startWorker()
	ctx := ctxFor(t)
	turn, err := e.client().Submit(ctx, wire.TurnRequest{SessionID: "midstream", TurnID: "t1", Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "talk"}}})
	if err != nil {
		t.Fatal(err)
	}
	waitChunk(ctx, t, turn)
	first.stop(t)
	e.startWorker()
	res, err := turn.Wait(ctx)
	if err != nil || res.Terminal.Type != wire.EventTurnCompleted {
		t.Fatalf("Wait() = %+v, %v; want completed", res, err)
	}
	log, _ := records[wire.Message](t, e.js, wire.StreamMessages, "turn.message.midstream")
	if len(log) != 2 || log[1].Role != wire.RoleAssistant {
		t.Fatalf("session log = %d messages; want the input and one answer", len(log))
	}
	chunks, _ := records[wire.Chunk](t, e.js, wire.StreamChunks, "turn.chunk.midstream.t1")
	markers := map[int]string{}
	seen := map[[2]int]bool{}
	for _, c := range chunks {
		if c.Step != 1 {
			t.Errorf("chunk of step %d; want only step 1", c.Step)
		}
		key := [2]int{c.Attempt, c.Seq}
		if seen[key] {
			t.Errorf("attempt %d seq %d published twice", c.Attempt, c.Seq)
		}
		seen[key] = true
		if c.Marker != "" {
			markers[c.Attempt] = c.Marker
		}
	}
	if markers[2] != wire.MarkerCompleted || markers[1] == wire.MarkerCompleted {
		t.Errorf("attempt markers = %v; want attempt 1 cut short and attempt 2 completed", markers)
	}
}

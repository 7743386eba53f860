package worker_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestForgedToolResults: a hostile tool worker that serves tool a answers,
// in a turn with tools a and b, the call to b with the token of its own
// call to a, with a made-up token and with none; replays another session's
// call (that it served) into the turn, and that call's token onto the
// turn's call to b; answers a call the turn never made; answers its own
// call a second time; and answers with another turn's id. The worker
// rejects all of it (each a tool.result-rejected event with its reason,
// but the other turn's result, ignored silently), nothing forged reaches
// the session log, and the real results, arriving after the forged ones,
// are accepted: the turn completes with them.
func TestForgedToolResults(t *testing.T) {
	e := newEnv(t, mockllm.Queue(
		calls("tool_calls", call("call_o1", "a", `{"q":"other"}`)), say("Done for other.", "stop"),
		calls("tool_calls", call("call_a", "a", `{"q":"x"}`), call("call_b", "b", `{"q":"y"}`)), say("Done.", "stop"),
	))
	e.startWorker()
	gotA, gotB := make(chan wire.ToolCall, 2), make(chan wire.ToolCall, 1)
	releaseA, releaseB := make(chan struct{}), make(chan struct{})
	e.serveTools(map[string]toolworker.Handler{
		"a": func(ctx context.Context, c wire.ToolCall) (toolworker.Result, error) {
			gotA <- c
			if c.SessionID == "victim" {
				select {
				case <-releaseA:
				case <-ctx.Done():
					return toolworker.Result{}, ctx.Err()
				}
			}
			return toolworker.Result{Content: "a real for " + c.SessionID}, nil
		},
		"b": func(ctx context.Context, c wire.ToolCall) (toolworker.Result, error) {
			gotB <- c
			select {
			case <-releaseB:
			case <-ctx.Done():
				return toolworker.Result{}, ctx.Err()
			}
			return toolworker.Result{Content: "b real"}, nil
		},
	})
	ctx := ctxFor(t)
	tools := []wire.Tool{tool("a"), tool("b")}
	submit := func(session string) *turnOf {
		t.Helper()
		turn, err := e.client().Submit(ctx, wire.TurnRequest{SessionID: session, TurnID: "t1",
			Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "use the tools"}}, Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		return &turnOf{t: t, ctx: ctx, wait: turn.Wait}
	}
	next := func(ch chan wire.ToolCall, what string) wire.ToolCall {
		t.Helper()
		select {
		case c := <-ch:
			return c
		case <-ctx.Done():
			t.Fatalf("no call %s", what)
			return wire.ToolCall{}
		}
	}

	// Another session's turn, whose call to a the hostile tool worker serves.
	if res := submit("other").result(); res.Terminal.Type != wire.EventTurnCompleted {
		t.Fatalf("other session's turn: %s %v; want completed", res.Terminal.Type, res.Terminal.Payload)
	}
	otherCall := next(gotA, "to a from the other session")

	victim := submit("victim")
	callA, callB := next(gotA, "to a"), next(gotB, "to b")
	if callA.SessionID != "victim" || callA.TurnID != "t1" || callB.SessionID != "victim" || callA.Token == "" || callB.Token == "" || callA.Token == callB.Token {
		t.Fatalf("calls %+v, %+v; want the victim's two calls, each with its own token", callA, callB)
	}

	stored := 0
	forge := func(r wire.ToolResult, msgID string) {
		t.Helper()
		data, err := wire.JSON.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		m := &nats.Msg{Subject: wire.Subjects{}.Result("victim"), Data: data, Header: nats.Header{}}
		var opts []jetstream.PublishOpt
		if msgID != "" {
			opts = append(opts, jetstream.WithMsgID(msgID))
		}
		if _, err := e.js.PublishMsg(ctx, m, opts...); err != nil {
			t.Fatal(err)
		}
		stored++
	}
	forged := func(session, turn, callID, token string) wire.ToolResult {
		return wire.ToolResult{SessionID: session, TurnID: turn, CallID: callID, Token: token, Content: "forged"}
	}
	// a: b's call answered with a's token, under the message id a result
	// of b had before tokens were part of it.
	forge(forged("victim", "t1", callB.CallID, callA.Token), "result:victim:t1:"+callB.CallID)
	// b: a made-up token, and none.
	forge(forged("victim", "t1", callB.CallID, "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWY"), "")
	forge(forged("victim", "t1", callB.CallID, ""), "")
	// c: another session's call, replayed into this session as it was, and
	// its token on this session's call to b.
	forge(forged(otherCall.SessionID, otherCall.TurnID, otherCall.CallID, otherCall.Token), "")
	forge(forged("victim", "t1", callB.CallID, otherCall.Token), "")
	// A call the turn never made.
	forge(forged("victim", "t1", "call_nobody", callA.Token), "")
	// Another turn's result: ignored without an event.
	forge(forged("victim", "t0", callA.CallID, callA.Token), "")

	// The real result of a, after the forged ones; then a second answer to
	// a, with a's own token, once the first is stored.
	close(releaseA)
	stored++
	e.awaitResults(t, "victim", stored)
	forge(forged("victim", "t1", callA.CallID, callA.Token), "")
	// The real result of b, last.
	close(releaseB)
	res := victim.result()

	if res.Terminal.Type != wire.EventTurnCompleted {
		t.Fatalf("terminal = %s %v; want completed", res.Terminal.Type, res.Terminal.Payload)
	}
	type rejection struct{ reason, tool, callID any }
	want := []rejection{
		{wire.ResultRejectedBadToken, "b", callB.CallID},
		{wire.ResultRejectedBadToken, "b", callB.CallID},
		{wire.ResultRejectedBadToken, "b", callB.CallID},
		{wire.ResultRejectedWrongSession, nil, nil},
		{wire.ResultRejectedBadToken, "b", callB.CallID},
		{wire.ResultRejectedUnknownCall, nil, nil},
		{wire.ResultRejectedDuplicate, "a", callA.CallID},
	}
	var got []rejection
	for _, ev := range res.Events {
		if ev.Type == wire.EventToolResultRejected {
			if ev.TurnID != "t1" || len(ev.Payload) > 3 {
				t.Errorf("tool.result-rejected event %+v; want the turn's, with reason, tool and call_id at most", ev)
			}
			got = append(got, rejection{ev.Payload["reason"], ev.Payload["tool"], ev.Payload["call_id"]})
		}
	}
	if len(got) != len(want) {
		t.Fatalf("tool.result-rejected events = %v; want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("tool.result-rejected event %d = %v; want %v", i, got[i], want[i])
		}
	}
	n := countTypes(res.Events)
	if n[wire.EventToolResult] != 2 || n[wire.EventToolRepaired] != 0 {
		t.Errorf("events = %v; want two tool.result (the real ones) and no tool.repaired", n)
	}

	log, _ := records[wire.Message](t, e.js, wire.StreamMessages, wire.Subjects{}.Message("victim"))
	results := map[string]string{}
	for _, m := range log {
		if strings.Contains(m.Content, "forged") {
			t.Errorf("session log holds a forged result: %+v", m)
		}
		if m.Role == wire.RoleTool {
			if m.Synthesized || m.IsError {
				t.Errorf("tool message %+v; want a real result", m)
			}
			results[m.ToolCallID] = m.Content
		}
	}
	if len(results) != 2 || results[callA.CallID] != "a real for victim" || results[callB.CallID] != "b real" {
		t.Errorf("tool messages by call = %v; want %s: a real for victim, %s: b real", results, callA.CallID, callB.CallID)
	}
}

// turnOf waits for a submitted turn's result.
type turnOf struct {
	t    *testing.T
	ctx  context.Context
	wait func(context.Context) (*client.Result, error)
}

func (o *turnOf) result() *client.Result {
	o.t.Helper()
	res, err := o.wait(o.ctx)
	if err != nil {
		o.t.Fatalf("Wait() = %v", err)
	}
	return res
}

// awaitResults waits until session's result subject holds n records.
func (e *env) awaitResults(t *testing.T, session string, n int) {
	t.Helper()
	subject := wire.Subjects{}.Result(session)
	eventually(t, "the real result to be stored", func() bool {
		s, err := e.js.Stream(t.Context(), wire.StreamResults)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(t.Context(), jetstream.WithSubjectFilter(subject))
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Subjects[subject] >= uint64(n)
	})
}

package worker_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// Scripted provider answers for the loop scenarios.
func say(text, finish string) *mockllm.Response {
	return mockllm.NewStream("mock-1").Text(text).Finish(finish).Usage(10, 2).Response()
}

func think(reasoning, text, finish string) *mockllm.Response {
	s := mockllm.NewStream("mock-1").Reasoning("reasoning_content", reasoning)
	if text != "" {
		s.Text(text)
	}
	return s.Finish(finish).Usage(10, 2).Response()
}

func calls(finish string, cs ...mockllm.Call) *mockllm.Response {
	return mockllm.NewStream("mock-1").ToolCalls(4, cs...).Finish(finish).Usage(10, 2).Response()
}

func call(id, name, args string) mockllm.Call {
	return mockllm.Call{ID: id, Name: name, Arguments: args}
}

// scenario is one turn through the real worker, tool worker, NATS and the
// mock provider over HTTP.
type scenario struct {
	name    string
	script  []*mockllm.Response
	budgets *wire.Budgets
	// tool answers calls of "lookup" (default: echo); nil answers nothing.
	tool        toolworker.Handler
	noTool      bool
	toolTimeout time.Duration
	// setup runs once the environment is up.
	setup func(e *env)
	check func(t *testing.T, o *outcome)
}

// outcome is what a scenario produced.
type outcome struct {
	res       *client.Result
	requests  []*mockllm.Request
	toolCalls int
	dispatch  int // tool calls stored on TURN_TOOLS
	events    map[string]int
	e         *env
}

func (o *outcome) terminal(t *testing.T, typ, reason string) {
	t.Helper()
	if o.res.Terminal.Type != typ || reason != "" && o.res.Terminal.Payload["reason"] != reason {
		t.Fatalf("terminal = %s %v; want %s reason %q", o.res.Terminal.Type, o.res.Terminal.Payload, typ, reason)
	}
}

func (o *outcome) roles() string {
	var b strings.Builder
	for _, m := range o.res.Messages {
		b.WriteString(string(m.Role))
		if m.Synthesized {
			b.WriteString("*")
		}
		b.WriteString(" ")
	}
	return strings.TrimSpace(b.String())
}

var lookupTool = wire.Tool{Name: "lookup", Description: "looks a key up", Parameters: map[string]any{
	"type":       "object",
	"properties": map[string]any{"key": map[string]any{"type": "string"}},
	"required":   []any{"key"},
}}

func runScenario(t *testing.T, sc scenario) *outcome {
	t.Helper()
	e := newEnv(t, mockllm.Queue(sc.script...))
	if sc.toolTimeout > 0 {
		e.cfg.Worker.ToolTimeout = config.Duration(sc.toolTimeout)
	}
	if sc.setup != nil {
		sc.setup(e)
	}
	e.startWorker()
	var mu sync.Mutex
	n := 0
	if !sc.noTool {
		h := sc.tool
		if h == nil {
			h = func(_ context.Context, c wire.ToolCall) (toolworker.Result, error) {
				return toolworker.Result{Content: "value for " + c.Arguments}, nil
			}
		}
		e.serveTools(map[string]toolworker.Handler{"lookup": func(ctx context.Context, c wire.ToolCall) (toolworker.Result, error) {
			mu.Lock()
			n++
			mu.Unlock()
			return h(ctx, c)
		}})
	}
	ctx := ctxFor(t)
	turn, err := e.client().Submit(ctx, wire.TurnRequest{SessionID: "loop", TurnID: "t1", Budgets: sc.budgets,
		Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "please help"}}, Tools: []wire.Tool{lookupTool}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := turn.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s, err := e.js.Stream(ctx, wire.StreamTools)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return &outcome{res: res, requests: e.mock.Requests(), toolCalls: n, dispatch: int(info.State.LastSeq), events: countTypes(res.Events), e: e}
}

func TestLoopScenarios(t *testing.T) {
	scenarios := []scenario{
		{name: "stop completes", script: []*mockllm.Response{say("Done.", "stop")}, check: func(t *testing.T, o *outcome) {
			o.terminal(t, wire.EventTurnCompleted, "")
			if o.roles() != "user assistant" || o.res.Text != "Done." {
				t.Errorf("log %q text %q; want user assistant, Done.", o.roles(), o.res.Text)
			}
		}},
		{name: "tool_calls plan and run tools", script: []*mockllm.Response{
			calls("tool_calls", call("call_1", "lookup", `{"key":"a"}`)), say("Found it.", "stop"),
		}, check: func(t *testing.T, o *outcome) {
			o.terminal(t, wire.EventTurnCompleted, "")
			if o.roles() != "user assistant tool assistant" || o.toolCalls != 1 || o.res.Messages[2].Content != `value for {"key":"a"}` {
				t.Errorf("log %q, tool ran %d times, result %q", o.roles(), o.toolCalls, o.res.Messages[2].Content)
			}
		}},
		{name: "complete calls under a stop make a tool turn", script: []*mockllm.Response{
			calls("stop", call("call_1", "lookup", `{"key":"a"}`)), say("Found it.", "stop"),
		}, check: func(t *testing.T, o *outcome) {
			o.terminal(t, wire.EventTurnCompleted, "")
			if o.toolCalls != 1 || o.res.Messages[1].FinishReason != wire.FinishToolCalls {
				t.Errorf("tool ran %d times, finish %q; want 1 and tool_calls", o.toolCalls, o.res.Messages[1].FinishReason)
			}
		}},
		{name: "length with text continues on the same route", script: []*mockllm.Response{
			say("Once upon ", "length"), say("a time.", "stop"),
		}, check: func(t *testing.T, o *outcome) {
			o.terminal(t, wire.EventTurnCompleted, "")
			if o.roles() != "user assistant assistant" || o.res.Text != "Once upon a time." {
				t.Errorf("log %q text %q; want the answer continued and joined", o.roles(), o.res.Text)
			}
			second := o.requests[1].Messages
			if last := second[len(second)-1]; last.Role != "user" || !strings.Contains(last.Text(), "cut off") || second[len(second)-2].Text() != "Once upon " {
				t.Errorf("continuation request ends %+v; want the cut answer, then the continue instruction", second[len(second)-2:])
			}
			if o.events[wire.EventTurnContinued] != 1 {
				t.Errorf("turn.continued events = %d; want 1", o.events[wire.EventTurnContinued])
			}
		}},
		{name: "content_filter is never continued", script: []*mockllm.Response{say("Partial", "content_filter")}, check: func(t *testing.T, o *outcome) {
			o.terminal(t, wire.EventTurnCompleted, "")
			if len(o.requests) != 1 || o.res.Text != "Partial" {
				t.Errorf("%d provider requests, text %q; want 1 and the filtered text", len(o.requests), o.res.Text)
			}
		}},
		{name: "content_filter with nothing gives a visible notice", script: []*mockllm.Response{
			mockllm.NewStream("mock-1").Finish("content_filter").Response(),
		}, check: func(t *testing.T, o *outcome) {
			o.terminal(t, wire.EventTurnCompleted, "")
			if o.roles() != "user assistant*" || !strings.Contains(o.res.Text, "content filter") {
				t.Errorf("log %q text %q; want a synthesized notice", o.roles(), o.res.Text)
				for _, m := range o.res.Messages {
					t.Logf("%+v", m)
				}
			}
		}},
		{name: "unknown finish is never success", script: []*mockllm.Response{say("Hmm", "banana")}, check: func(t *testing.T, o *outcome) {
			o.terminal(t, wire.EventTurnFailed, "unusable_response")
			if o.roles() != "user" {
				t.Errorf("log %q; want nothing persisted from an unusable response", o.roles())
			}
		}},
		{name: "incomplete counts only if a fallback succeeds", script: []*mockllm.Response{say("Par", "error")}, check: func(t *testing.T, o *outcome) {
			o.terminal(t, wire.EventTurnFailed, "provider_failed")
			if o.res.Terminal.Payload["class"] != "INCOMPLETE_RESPONSE" || o.roles() != "user" {
				t.Errorf("terminal %v log %q; want INCOMPLETE_RESPONSE and nothing persisted", o.res.Terminal.Payload, o.roles())
			}
		}},
		{name: "length-truncated tool calls: retry then refusal, no tool ever published", script: []*mockllm.Response{
			calls("length", call("call_1", "lookup", `{"key":"a"}`)), calls("length", call("call_1", "lookup", `{"key":"a"}`)),
		}, check: func(t *testing.T, o *outcome) {
			o.terminal(t, wire.EventTurnFailed, "truncated_tool_calls")
			if o.toolCalls != 0 || o.dispatch != 0 || o.events[wire.EventToolDispatched] != 0 {
				t.Errorf("tool ran %d, stored %d, dispatched events %d; want none", o.toolCalls, o.dispatch, o.events[wire.EventToolDispatched])
			}
			if len(o.requests) != 2 || o.roles() != "user assistant*" || !strings.Contains(o.res.Text, "no tool was run") {
				t.Errorf("%d requests, log %q, text %q; want 2, a synthesized refusal", len(o.requests), o.roles(), o.res.Text)
			}
			if string(o.requests[0].Body) != string(o.requests[1].Body) {
				t.Errorf("the retry's request differs from the first")
			}
		}},
		{name: "length-truncated tool calls: retry succeeds", script: []*mockllm.Response{
			calls("length", call("call_1", "lookup", `{"key":"a"}`)), calls("tool_calls", call("call_2", "lookup", `{"key":"b"}`)), say("Ok.", "stop"),
		}, check: func(t *testing.T, o *outcome) {
			o.terminal(t, wire.EventTurnCompleted, "")
			if o.toolCalls != 1 || o.res.Messages[1].ToolCalls[0].Arguments != `{"key":"b"}` || o.events[wire.EventStepRetried] != 1 {
				t.Errorf("tool ran %d, calls %+v, retries %d; want the retry's call run once", o.toolCalls, o.res.Messages[1].ToolCalls, o.events[wire.EventStepRetried])
			}
		}},
		{name: "reasoning only: prefill retry succeeds", script: []*mockllm.Response{
			think("I should think more", "", "stop"), say("The answer is 4.", "stop"),
		}, check: func(t *testing.T, o *outcome) {
			o.terminal(t, wire.EventTurnCompleted, "")
			if o.res.Text != "The answer is 4." || o.roles() != "user assistant" {
				t.Errorf("log %q text %q", o.roles(), o.res.Text)
			}
			second := o.requests[1].Messages
			if last := second[len(second)-1]; last.Role != "user" || !strings.Contains(last.Text(), "visible answer") {
				t.Errorf("retry request ends with %+v; want the prefill instruction", last)
			}
		}},
		{name: "reasoning only twice: safe guidance", script: []*mockllm.Response{
			think("thinking", "", "stop"), think("still thinking", "", "length"),
		}, check: func(t *testing.T, o *outcome) {
			o.terminal(t, wire.EventTurnFailed, "no_visible_answer")
			if o.roles() != "user assistant*" || strings.Contains(o.res.Text, "thinking") {
				t.Errorf("log %q text %q; want synthesized guidance without the reasoning", o.roles(), o.res.Text)
			}
		}},
		{name: "malformed arguments then model correction", script: []*mockllm.Response{
			calls("tool_calls", call("call_1", "lookup", `{"key":`)), calls("tool_calls", call("call_2", "lookup", `{"key":"a"}`)), say("Ok.", "stop"),
		}, check: func(t *testing.T, o *outcome) {
			o.terminal(t, wire.EventTurnCompleted, "")
			m := o.res.Messages
			if o.roles() != "user assistant tool* assistant tool assistant" || o.toolCalls != 1 {
				t.Fatalf("log %q tool ran %d; want a planning error, then the corrected call run once", o.roles(), o.toolCalls)
			}
			if m[2].ToolCallID != m[1].ToolCalls[0].ID || !m[2].IsError || !strings.Contains(m[2].Content, "not valid JSON") {
				t.Errorf("planning error = %+v; want a correlated error result", m[2])
			}
			replay := o.requests[1].Messages[1].ToolCalls[0]
			if replay.Function.Name != "unparseable_tool_call" || replay.Function.Arguments != "{}" || replay.ID != m[1].ToolCalls[0].ID {
				t.Errorf("replayed malformed call = %+v; want the placeholder with the original id", replay)
			}
		}},
		{name: "arguments not matching the schema are a planning error", script: []*mockllm.Response{
			calls("tool_calls", call("call_1", "lookup", `{"key":5}`)), say("Ok.", "stop"),
		}, check: func(t *testing.T, o *outcome) {
			o.terminal(t, wire.EventTurnCompleted, "")
			if o.toolCalls != 0 || !strings.Contains(o.res.Messages[2].Content, "do not match") {
				t.Errorf("tool ran %d, result %q; want a schema planning error", o.toolCalls, o.res.Messages[2].Content)
			}
		}},
		{name: "a hallucinated tool name", script: []*mockllm.Response{
			calls("tool_calls", call("call_1", "delete_everything", `{}`)), say("Sorry.", "stop"),
		}, check: func(t *testing.T, o *outcome) {
			o.terminal(t, wire.EventTurnCompleted, "")
			if o.toolCalls != 0 || o.dispatch != 0 || !strings.Contains(o.res.Messages[2].Content, "available tools are: lookup") {
				t.Errorf("ran %d, stored %d, result %q; want a planning error naming the tools", o.toolCalls, o.dispatch, o.res.Messages[2].Content)
			}
		}},
		{name: "iteration budget", budgets: &wire.Budgets{MaxIterations: 2}, script: []*mockllm.Response{
			calls("tool_calls", call("call_1", "lookup", `{"key":"a"}`)), calls("tool_calls", call("call_2", "lookup", `{"key":"b"}`)),
		}, check: func(t *testing.T, o *outcome) {
			o.terminal(t, wire.EventTurnFailed, "budget_exceeded")
			if o.res.Terminal.Payload["budget"] != "max_iterations" || o.events[wire.EventBudgetExceeded] != 1 || !strings.Contains(o.res.Text, "limit of 2 model calls") {
				t.Errorf("terminal %v, text %q", o.res.Terminal.Payload, o.res.Text)
			}
		}},
		{name: "tool-call budget", budgets: &wire.Budgets{MaxToolCalls: 1}, script: []*mockllm.Response{
			calls("tool_calls", call("call_1", "lookup", `{"key":"a"}`), call("call_2", "lookup", `{"key":"b"}`)),
		}, check: func(t *testing.T, o *outcome) {
			o.terminal(t, wire.EventTurnFailed, "budget_exceeded")
			if o.res.Terminal.Payload["budget"] != "max_tool_calls" || o.toolCalls != 0 || o.dispatch != 0 {
				t.Errorf("terminal %v, ran %d, stored %d; want no call run", o.res.Terminal.Payload, o.toolCalls, o.dispatch)
			}
			if o.roles() != "user assistant tool* tool* assistant*" {
				t.Errorf("log %q; want both calls closed with synthesized results, then the notice", o.roles())
			}
		}},
		{name: "repeated identical tool failures", budgets: &wire.Budgets{MaxRepeatedToolFailures: 1}, tool: func(context.Context, wire.ToolCall) (toolworker.Result, error) {
			return toolworker.Result{Content: "disk full", IsError: true}, nil
		}, script: []*mockllm.Response{
			calls("tool_calls", call("call_1", "lookup", `{"key":"a"}`)), calls("tool_calls", call("call_2", "lookup", `{"key":"a"}`)),
		}, check: func(t *testing.T, o *outcome) {
			o.terminal(t, wire.EventTurnFailed, "budget_exceeded")
			if o.res.Terminal.Payload["budget"] != "max_repeated_tool_failures" || o.toolCalls != 2 {
				t.Errorf("terminal %v, ran %d; want the budget hit after the second identical failure", o.res.Terminal.Payload, o.toolCalls)
			}
		}},
		{name: "wall-clock budget", budgets: &wire.Budgets{WallClockMS: 400}, noTool: true, script: []*mockllm.Response{
			calls("tool_calls", call("call_1", "lookup", `{"key":"a"}`)),
		}, check: func(t *testing.T, o *outcome) {
			o.terminal(t, wire.EventTurnFailed, "budget_exceeded")
			if o.res.Terminal.Payload["budget"] != "wall_clock" || o.roles() != "user assistant tool* assistant*" {
				t.Errorf("terminal %v log %q; want the pending call closed and the notice", o.res.Terminal.Payload, o.roles())
			}
		}},
		{name: "a tool worker that never answers", noTool: true, toolTimeout: 300 * time.Millisecond, script: []*mockllm.Response{
			calls("tool_calls", call("call_1", "lookup", `{"key":"a"}`)), say("It timed out.", "stop"),
		}, check: func(t *testing.T, o *outcome) {
			o.terminal(t, wire.EventTurnCompleted, "")
			if r := o.res.Messages[2]; !r.Synthesized || !r.IsError || o.events[wire.EventToolRepaired] != 1 {
				t.Errorf("result %+v, repaired events %d; want a synthesized error and tool.repaired", r, o.events[wire.EventToolRepaired])
			}
		}},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			o := runScenario(t, sc)
			sc.check(t, o)
			conforms(t, o.e.js, "loop", "t1")
		})
	}
}

// TestResultWithUnknownID: a result whose id matches no pending call is
// rejected (a tool.result-rejected event, reason unknown_call) and ignored,
// never attached to another call, even with a token that verifies for the
// call it names.
func TestResultWithUnknownID(t *testing.T) {
	var js jetstream.JetStream
	o := runScenario(t, scenario{
		script: []*mockllm.Response{calls("tool_calls", call("call_1", "lookup", `{"key":"a"}`)), say("Ok.", "stop")},
		setup:  func(e *env) { js = e.js },
		tool: func(ctx context.Context, c wire.ToolCall) (toolworker.Result, error) {
			// A stray result, published before the real one.
			stray := &wire.ToolResult{SessionID: c.SessionID, TurnID: c.TurnID, CallID: "call_nobody", Token: c.Token, Content: "stray"}
			data, err := wire.JSON.Marshal(stray)
			if err != nil {
				return toolworker.Result{}, err
			}
			if _, err := js.Publish(ctx, "turn.result."+c.SessionID, data); err != nil {
				return toolworker.Result{}, err
			}
			return toolworker.Result{Content: "real"}, nil
		},
	})
	o.terminal(t, wire.EventTurnCompleted, "")
	if r := o.res.Messages[2]; r.Content != "real" || r.ToolCallID != o.res.Messages[1].ToolCalls[0].ID {
		t.Errorf("result = %+v; want the real result on the real call", r)
	}
	var rejected []wire.SessionEvent
	for _, ev := range o.res.Events {
		if ev.Type == wire.EventToolResultRejected {
			rejected = append(rejected, ev)
		}
	}
	if len(rejected) != 1 || rejected[0].Payload["reason"] != wire.ResultRejectedUnknownCall || rejected[0].Payload["call_id"] != nil {
		t.Errorf("tool.result-rejected events = %+v; want one, reason unknown_call, naming no call", rejected)
	}
	if n := o.events[wire.EventToolResult]; n != 1 {
		t.Errorf("tool.result events = %d; want 1", n)
	}
}

package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/provider/responses"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// responsesProvider answers Responses requests with distinct response ids,
// keeps what it stored, and can lose it: a request continuing a response it
// no longer has gets 404 previous_response_not_found.
type responsesProvider struct {
	mu     sync.Mutex
	n      int
	stored map[string]bool
	bodies []map[string]any
}

func (p *responsesProvider) forget() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stored = map[string]bool{}
}

func (p *responsesProvider) Respond(req *mockllm.Request) *mockllm.Response {
	p.mu.Lock()
	defer p.mu.Unlock()
	var body map[string]any
	_ = json.Unmarshal(req.Body, &body)
	p.bodies = append(p.bodies, body)
	if prev, _ := body["previous_response_id"].(string); prev != "" && !p.stored[prev] {
		return mockllm.Error(http.StatusNotFound, "previous_response_not_found", "Previous response with id '"+prev+"' not found.", nil)
	}
	p.n++
	id := fmt.Sprintf("resp_%d", p.n)
	p.stored[id] = true
	s := mockllm.NewResponsesStreamID(id, "gpt-test")
	last := req.LastInput()
	if len(req.Tools) > 0 && last.IsMessage("user") {
		s.Text("Checking. ").FunctionCalls(3, mockllm.Call{ID: fmt.Sprintf("call_prov_%d", p.n), Name: "lookup", Arguments: `{"key":"a"}`})
	} else {
		s.Text(fmt.Sprintf("Answer %d.", p.n))
	}
	return s.Usage(100, 0, 10, 0).Completed().Response()
}

func (p *responsesProvider) body(i int) map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bodies[i]
}

func (p *responsesProvider) requests() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.bodies)
}

func inputTypes(body map[string]any) []string {
	var out []string
	items, _ := body["input"].([]any)
	for _, it := range items {
		m := it.(map[string]any)
		if t, _ := m["type"].(string); t != "" && t != "message" {
			out = append(out, t)
		} else {
			out = append(out, fmt.Sprint(m["role"]))
		}
	}
	return out
}

// TestResponsesDurableCursor: a Responses provider that stores responses is
// continued by previous_response_id within a turn (only the tool results,
// answering the provider's own call ids) and across turns (only the new
// input); a changed toolset degrades to replay; a lost cursor replays when
// nothing waited on it and fails the turn when tool results did.
func TestResponsesDurableCursor(t *testing.T) {
	prov := &responsesProvider{stored: map[string]bool{}}
	e := newEnv(t, prov)
	e.cfg = &config.Config{
		Providers: []config.Provider{{Name: "openai", API: config.API(responses.API.Name), BaseURL: e.http.URL + "/v1", Store: true}},
		Models:    []config.Model{{Provider: "openai", Name: "gpt-test"}},
		Routes:    []config.Route{{Name: "default", Targets: []config.Target{{Provider: "openai", Model: "gpt-test"}}}},
	}
	e.cfg.ApplyDefaults()
	e.startWorker()
	var forgetOnCall atomic.Bool
	e.serveTools(map[string]toolworker.Handler{"lookup": func(ctx context.Context, call wire.ToolCall) (toolworker.Result, error) {
		if forgetOnCall.Load() {
			prov.forget()
		}
		return echoTool("lookup")(ctx, call)
	}})
	c := e.client()
	run := func(turn string, tools []wire.Tool) *turnResult {
		t.Helper()
		ctx := ctxFor(t)
		tr, err := c.Submit(ctx, wire.TurnRequest{SessionID: "cur", TurnID: turn, System: "Be brief.",
			Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "question " + turn}}, Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		res, err := tr.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return &turnResult{res.Terminal.Type, fmt.Sprint(res.Terminal.Payload["reason"]), countTypes(res.Events), res.Events}
	}

	// Turn 1: a tool round. Step 2 continues step 1's response.
	r1 := run("t1", []wire.Tool{lookupTool})
	if r1.typ != wire.EventTurnCompleted || prov.requests() != 2 {
		t.Fatalf("turn 1 = %s (%s), %d requests; want completed in 2", r1.typ, r1.reason, prov.requests())
	}
	if b := prov.body(0); b["previous_response_id"] != nil || b["store"] != true {
		t.Errorf("first request = %v; want a stored request without a cursor", b)
	}
	b := prov.body(1)
	if b["previous_response_id"] != "resp_1" || fmt.Sprint(inputTypes(b)) != "[function_call_output]" {
		t.Errorf("step 2 continues %v with %v; want resp_1 and only the tool result", b["previous_response_id"], inputTypes(b))
	}
	if out := b["input"].([]any)[0].(map[string]any); out["call_id"] != "call_prov_1" {
		t.Errorf("tool result answers %v; want the provider's own call id call_prov_1", out["call_id"])
	}

	// Turn 2, same system prompt and tools: continues turn 1's last response
	// with only the new input.
	r2 := run("t2", []wire.Tool{lookupTool})
	b = prov.body(2)
	if r2.typ != wire.EventTurnCompleted || b["previous_response_id"] != "resp_2" || fmt.Sprint(inputTypes(b)) != "[user]" {
		t.Errorf("turn 2 first request continues %v with %v (%s); want resp_2 and only the new user message", b["previous_response_id"], inputTypes(b), r2.typ)
	}

	// Turn 3 with another toolset: the envelope degrades to replay.
	r3 := run("t3", nil)
	b = prov.body(prov.requests() - 1)
	if r3.typ != wire.EventTurnCompleted || b["previous_response_id"] != nil || len(inputTypes(b)) < 5 {
		t.Errorf("turn 3 request = cursor %v, input %v (%s); want a full replay", b["previous_response_id"], inputTypes(b), r3.typ)
	}
	if !r3.degraded(t, "toolset_changed") {
		t.Errorf("turn 3 events = %v; want continuation_degraded toolset_changed", r3.counts)
	}

	// Turn 4: the provider lost everything; nothing waits on the cursor, so
	// the step replays at once and the turn completes.
	prov.forget()
	before := prov.requests()
	r4 := run("t4", nil)
	if r4.typ != wire.EventTurnCompleted || prov.requests() != before+2 || !r4.degraded(t, "cursor_lost") {
		t.Errorf("turn 4 = %s, %d requests, events %v; want a degraded replay that completes", r4.typ, prov.requests()-before, r4.counts)
	}
	if b := prov.body(prov.requests() - 1); b["previous_response_id"] != nil {
		t.Errorf("turn 4 retry still sent a cursor")
	}

	// Turn 5: the provider loses the response while tool results wait on
	// it: the turn fails and is not retried.
	forgetOnCall.Store(true)
	r5 := run("t5", []wire.Tool{lookupTool})
	if r5.typ != wire.EventTurnFailed || r5.reason != "tool_result_cursor_loss" || !r5.degraded(t, "cursor_lost") {
		t.Errorf("turn 5 = %s %s, events %v; want failed tool_result_cursor_loss after continuation_degraded", r5.typ, r5.reason, r5.counts)
	}
	conforms(t, e.js, "cur", "t5")
}

type turnResult struct {
	typ, reason string
	counts      map[string]int
	events      []wire.SessionEvent
}

func (r *turnResult) degraded(t *testing.T, reason string) bool {
	t.Helper()
	for _, ev := range r.events {
		if ev.Type == wire.EventContinuationDegraded && ev.Payload["reason"] == reason {
			return true
		}
	}
	return false
}

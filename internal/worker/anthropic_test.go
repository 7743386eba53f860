package worker_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/provider/anthropic"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestAnthropicThinkingToolTurn: a Messages tool loop with extended
// thinking works end to end over the mock's /v1/messages, which refuses,
// as Anthropic does, tool results whose assistant message does not open
// with its signed thinking: the step after the tool replays the thinking
// with its signature, and so does the next turn's replay of the first
// turn's tool group (same provider and model). The thinking never reaches
// the visible answer, the session log or the events.
func TestAnthropicThinkingToolTurn(t *testing.T) {
	e := newThinkingEnv(t, config.History{})
	c := e.client()
	for _, turnID := range []string{"t1", "t2"} {
		ctx := ctxFor(t)
		turn, err := c.Submit(ctx, wire.TurnRequest{SessionID: "an", TurnID: turnID,
			Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "look up a"}}, Tools: []wire.Tool{lookupTool}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := turn.Wait(ctx)
		if err != nil || res.Terminal.Type != wire.EventTurnCompleted {
			t.Fatalf("turn %s: %+v, %v; want completed", turnID, res.Terminal, err)
		}
		if !strings.HasPrefix(res.Text, "Here is what I found: lookup said") || strings.Contains(res.Text, "The user wrote") {
			t.Errorf("turn %s answer %q; want the tool's result reported, no thinking", turnID, res.Text)
		}
	}
	reqs := e.mock.Requests()
	if len(reqs) != 4 {
		t.Fatalf("provider requests = %d; want 4 (two steps per turn)", len(reqs))
	}
	for i, r := range reqs {
		if !r.Thinking || r.MaxTokens != 8192 || !strings.HasSuffix(r.Path, "/v1/messages") {
			t.Errorf("request %d: thinking %v, max_tokens %d, path %s; want thinking on, 8192, /v1/messages", i, r.Thinking, r.MaxTokens, r.Path)
		}
	}
	// The second turn's first request replays the first turn's tool group
	// with its signed thinking; its second request, both groups.
	signed := func(r *mockllm.Request) int {
		n := 0
		for _, m := range r.AnthropicMessages {
			if m.Role != "assistant" || len(m.Content.Of("tool_use")) == 0 {
				continue
			}
			if th := m.Content.Of("thinking"); len(th) == 1 && m.Content[0].Type == "thinking" && th[0].Signature == mockllm.Signature(th[0].Thinking) {
				n++
			} else {
				t.Errorf("replayed tool_use message %+v; want it to open with its signed thinking", m.Content)
			}
		}
		return n
	}
	if n := signed(reqs[1]); n != 1 {
		t.Errorf("step 2 of turn 1 replays %d signed tool-use messages; want 1", n)
	}
	if n := signed(reqs[2]); n != 1 {
		t.Errorf("turn 2's first request replays %d signed tool-use messages; want 1 (turn 1's)", n)
	}
	if n := signed(reqs[3]); n != 2 {
		t.Errorf("turn 2's second request replays %d signed tool-use messages; want 2", n)
	}
	// One user message holds each step's results.
	for _, m := range reqs[3].AnthropicMessages {
		if m.Role == "user" && len(m.Content.Of("tool_result")) > 0 && len(m.Content.Of("tool_result")) != len(m.Content) {
			t.Errorf("tool results message %+v; want only tool_result blocks", m.Content)
		}
	}
	msgs, _ := records[wire.Message](t, e.js, wire.StreamMessages, "turn.message.an")
	for _, m := range msgs {
		if strings.Contains(m.Content, "The user wrote") {
			t.Errorf("message %d holds the thinking: %q", m.Seq, m.Content)
		}
	}
	events, _ := records[wire.SessionEvent](t, e.js, wire.StreamEvents, "turn.event.an")
	for _, ev := range events {
		if b, _ := json.Marshal(ev); strings.Contains(string(b), "The user wrote") || strings.Contains(string(b), "Signature") {
			t.Errorf("event %s holds the thinking", ev.Type)
		}
	}
	conforms(t, e.js, "an", "t2")
}

// TestAnthropicThinkingEchoOverCap: with extended thinking on, a tool step
// whose signed thinking is over the echo cap is not stored for replay;
// Anthropic (and the mock) refuse tool results whose assistant message does
// not open with its thinking, so the step must replay flat, not natively
// without its thinking. (The mock answers a flat result by calling the tool
// again: the turn ends at its iteration budget, not refused.)
func TestAnthropicThinkingEchoOverCap(t *testing.T) {
	e := newThinkingEnv(t, config.History{EchoCap: 16}) // under any signed thinking
	ctx := ctxFor(t)
	turn, err := e.client().Submit(ctx, wire.TurnRequest{SessionID: "ao", TurnID: "t1",
		Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "look up a"}}, Tools: []wire.Tool{lookupTool},
		Budgets: &wire.Budgets{MaxIterations: 2}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := turn.Wait(ctx)
	if err != nil || res.Terminal.Payload["reason"] != "budget_exceeded" {
		t.Fatalf("turn: %+v, %v; want it to end at its budget, not refused", res.Terminal, err)
	}
	reqs := e.mock.Requests()
	if len(reqs) != 2 {
		t.Fatalf("provider requests = %d; want 2", len(reqs))
	}
	for _, m := range reqs[1].AnthropicMessages {
		if m.Role == "assistant" && len(m.Content.Of("tool_use")) > 0 {
			t.Errorf("step 2 replays a tool_use message without its thinking: %+v", m.Content)
		}
	}
}

// newThinkingEnv runs a worker whose one route is an Anthropic provider
// with extended thinking on, over the mock's /v1/messages, and a lookup
// tool worker.
func newThinkingEnv(t *testing.T, h config.History) *env {
	t.Helper()
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{Model: "claude-sonnet-4-5"}))
	e.cfg = &config.Config{
		Providers: []config.Provider{{Name: "anthropic", API: config.API(anthropic.API.Name), BaseURL: e.http.URL, MaxTokens: 8192, ThinkingBudget: 2048}},
		Models:    []config.Model{{Provider: "anthropic", Name: "claude-sonnet-4-5", ContextTokens: 200000}},
		Routes:    []config.Route{{Name: "default", Targets: []config.Target{{Provider: "anthropic", Model: "claude-sonnet-4-5"}}}},
		History:   h,
	}
	e.cfg.ApplyDefaults()
	e.startWorker()
	e.serveTools(map[string]toolworker.Handler{"lookup": echoTool("lookup")})
	return e
}

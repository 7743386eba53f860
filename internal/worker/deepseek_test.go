package worker_test

import (
	"net/http"
	"testing"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/provider/deepseek"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// deepseekThinking answers like DeepSeek in thinking mode: it rejects a
// replayed tool-call turn without its reasoning_content, as the real API
// does, thinks before calling a tool, and answers once it has results.
func deepseekThinking() mockllm.Script {
	return mockllm.ScriptFunc(func(req *mockllm.Request) *mockllm.Response {
		for _, m := range req.Messages {
			if m.Role == "assistant" && len(m.ToolCalls) > 0 && m.ReasoningContent == nil {
				return mockllm.Error(http.StatusBadRequest, "invalid_request_error", "The reasoning_content in the thinking mode must be passed back to the API.", nil)
			}
			if m.Role == "assistant" && len(m.ToolCalls) == 0 && m.ReasoningContent != nil {
				return mockllm.Error(http.StatusBadRequest, "invalid_request_error", "reasoning_content on a plain turn", nil)
			}
		}
		last := req.LastMessage()
		if last.Role == "user" {
			return mockllm.NewStream("deepseek-reasoner").Reasoning("reasoning_content", "I should look it up first. ").
				ToolCalls(4, mockllm.Call{ID: "call_00_abcdefghijklmnopqrstuvwx", Name: "lookup", Arguments: `{"key":"a"}`}).
				Finish("tool_calls").Response()
		}
		return mockllm.NewStream("deepseek-reasoner").Reasoning("reasoning_content", "Now answer. ").Text("The value is known.").Finish("stop").Response()
	})
}

// TestDeepSeekReasoningEcho: a DeepSeek thinking-mode tool loop works end
// to end: the tool-call turn is replayed with its reasoning_content, within
// the turn and in the next turn; plain turns never carry it.
func TestDeepSeekReasoningEcho(t *testing.T) {
	e := newEnv(t, deepseekThinking())
	e.cfg = &config.Config{
		Providers: []config.Provider{{Name: "deepseek", API: config.API(deepseek.API.Name), BaseURL: e.http.URL + "/v1"}},
		Models:    []config.Model{{Provider: "deepseek", Name: "deepseek-reasoner"}},
		Routes:    []config.Route{{Name: "default", Targets: []config.Target{{Provider: "deepseek", Model: "deepseek-reasoner"}}}},
	}
	e.cfg.ApplyDefaults()
	e.startWorker()
	e.serveTools(map[string]toolworker.Handler{"lookup": echoTool("lookup")})
	c := e.client()
	for _, turnID := range []string{"t1", "t2"} {
		ctx := ctxFor(t)
		turn, err := c.Submit(ctx, wire.TurnRequest{SessionID: "ds", TurnID: turnID,
			Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "look up a"}}, Tools: []wire.Tool{lookupTool}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := turn.Wait(ctx)
		if err != nil || res.Terminal.Type != wire.EventTurnCompleted {
			t.Fatalf("turn %s: %+v, %v; want completed", turnID, res.Terminal, err)
		}
		if res.Text != "The value is known." {
			t.Errorf("turn %s answer %q", turnID, res.Text)
		}
	}
	reqs := e.mock.Requests()
	if len(reqs) != 4 {
		t.Fatalf("provider requests = %d; want 4 (two steps per turn)", len(reqs))
	}
	// The second turn's second request replays both tool-call turns with
	// their echo and no plain turn with it.
	echoes := 0
	for _, m := range reqs[3].Messages {
		if m.Role == "assistant" && len(m.ToolCalls) > 0 {
			if m.ReasoningContent == nil || *m.ReasoningContent != "I should look it up first. " {
				t.Errorf("replayed tool-call turn echo = %v; want its reasoning_content", m.ReasoningContent)
			}
			echoes++
		}
	}
	if echoes != 2 {
		t.Errorf("tool-call turns replayed with echo = %d; want 2", echoes)
	}
	events, _ := records[wire.SessionEvent](t, e.js, wire.StreamEvents, "turn.event.ds")
	if n := countTypes(events); n[wire.EventHistorySerialized] == 0 || n[wire.EventHistorySelected] == 0 {
		t.Errorf("history events = %v; want selected and serialized", n)
	}
	conforms(t, e.js, "ds", "t2")
}

package worker_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/worker"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// syncBuffer collects log lines from several goroutines.
type syncBuffer = worker.SyncBuffer

// Canaries planted where content lives.
const (
	canaryPrompt    = "CANARY-PROMPT-7f3a"
	canarySystem    = "CANARY-SYSTEM-91bc"
	canaryArgs      = "CANARY-ARGS-2d4e"
	canaryResult    = "CANARY-RESULT-c08f"
	canaryReasoning = "CANARY-REASONING-5e61"
	canaryError     = "CANARY-ERROR-b7a2"
)

// TestCanaries runs a turn whose prompt, system prompt, tool arguments,
// tool result, reasoning and a provider error message carry canaries, and
// searches every published event, every log line of the worker and the
// tool worker (at debug level) and every chunk delta for them: none may
// appear outside the places that content belongs to.
func TestCanaries(t *testing.T) {
	e := newEnv(t, mockllm.Queue(
		mockllm.Error(http.StatusInternalServerError, "server_error", "upstream said "+canaryError, nil),
		mockllm.NewStream("mock-1").Reasoning("reasoning_content", "I must not reveal "+canaryReasoning+" ").
			ToolCalls(3, mockllm.Call{ID: "call_1", Name: "lookup", Arguments: `{"key":"` + canaryArgs + `"}`}).Finish("tool_calls").Response(),
		mockllm.NewStream("mock-1").Reasoning("reasoning_content", "again "+canaryReasoning).Text("All done.").Finish("stop").Response(),
	))
	var logs syncBuffer
	log := zerolog.New(&logs).Level(zerolog.DebugLevel)
	e.startWorkerWith(func(o *worker.Options) { o.Log, o.Clock = log, &instantClock{} })
	e.serveTools(map[string]toolworker.Handler{"lookup": func(context.Context, wire.ToolCall) (toolworker.Result, error) {
		return toolworker.Result{Content: "secret value " + canaryResult}, nil
	}}, toolworker.WithLogger(log))

	ctx := ctxFor(t)
	turn, err := e.client().Submit(ctx, wire.TurnRequest{SessionID: "canary", TurnID: "t1", System: "Rules: " + canarySystem,
		Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "Look up " + canaryPrompt}}, Tools: []wire.Tool{lookupTool}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := turn.Wait(ctx)
	if err != nil || res.Terminal.Type != wire.EventTurnCompleted {
		t.Fatalf("Wait() = %+v, %v; want completed", res, err)
	}
	conforms(t, e.js, "canary", "t1")
	all := []string{canaryPrompt, canarySystem, canaryArgs, canaryResult, canaryReasoning, canaryError}

	// Events: none at all.
	_, events := records[wire.SessionEvent](t, e.js, wire.StreamEvents, "turn.event.canary")
	for _, m := range events {
		for _, c := range all {
			if bytes.Contains(m.Data(), []byte(c)) {
				t.Errorf("event %s carries %s", m.Data(), c)
			}
		}
	}
	if len(events) == 0 {
		t.Fatal("no events read")
	}
	// Logs: none at all.
	for _, c := range all {
		if strings.Contains(logs.String(), c) {
			t.Errorf("a log line carries %s", c)
		}
	}
	if !strings.Contains(logs.String(), "delivery settled") {
		t.Fatal("the worker's logs were not captured")
	}
	// Chunks: only what the model streamed visibly (its text and its
	// tool-call arguments); never reasoning, prompts, results or errors,
	// anywhere in a stored chunk. The provider's bytes, reasoning
	// included, are on the worker-only TURN_RAW.
	chunks, chunkMsgs := records[wire.Chunk](t, e.js, wire.StreamChunks, "turn.chunk.canary.t1")
	for _, m := range chunkMsgs {
		for _, c := range []string{canaryPrompt, canarySystem, canaryResult, canaryReasoning, canaryError} {
			if bytes.Contains(m.Data(), []byte(c)) {
				t.Errorf("chunk %s carries %s", m.Data(), c)
			}
		}
	}
	var raw bytes.Buffer
	for _, f := range rawFrames(t, e.js, "canary", "t1") {
		raw.Write(f.Bytes)
	}
	if !bytes.Contains(raw.Bytes(), []byte(canaryReasoning)) {
		t.Errorf("the raw frames lack the provider's reasoning; want its bytes as they arrived")
	}
	var deltas strings.Builder
	for _, c := range chunks {
		if c.Delta != nil {
			deltas.WriteString(c.Delta.Text)
			for _, tc := range c.Delta.ToolCalls {
				deltas.WriteString(tc.Name + tc.Arguments)
			}
		}
	}
	for _, c := range []string{canaryPrompt, canarySystem, canaryResult, canaryReasoning, canaryError} {
		if strings.Contains(deltas.String(), c) {
			t.Errorf("a chunk delta carries %s", c)
		}
	}
	if !strings.Contains(deltas.String(), canaryArgs) {
		t.Errorf("the tool-call argument deltas lack their arguments")
	}
	// The session log: content where it belongs, reasoning nowhere.
	var logText strings.Builder
	for _, m := range res.Messages {
		logText.WriteString(m.Content)
		for _, c := range m.ToolCalls {
			logText.WriteString(c.Arguments)
		}
	}
	for _, c := range []string{canaryReasoning, canaryError, canarySystem} {
		if strings.Contains(logText.String(), c) {
			t.Errorf("the session log carries %s", c)
		}
	}
	for _, c := range []string{canaryPrompt, canaryArgs, canaryResult} {
		if !strings.Contains(logText.String(), c) {
			t.Errorf("the session log lacks %s where it belongs", c)
		}
	}
}

// TestReplayCanaries: a credential in tool arguments and a reasoning marker
// appear in no event, log line, public message, chunk delta or compression
// input, while the tool still runs with the faithful arguments.
func TestReplayCanaries(t *testing.T) {
	const (
		secret = "sk-proj-CANARYsecret1234567890abcdEFGH"
		marker = "MARKER-REASONING-7c1d"
	)
	var mu sync.Mutex
	var summaryInputs [][]byte
	script := mockllm.ScriptFunc(func(req *mockllm.Request) *mockllm.Response {
		last := req.LastMessage()
		switch {
		case strings.Contains(last.Text(), "Summarize the conversation above"):
			mu.Lock()
			summaryInputs = append(summaryInputs, req.Body)
			mu.Unlock()
			return mockllm.NewStream("m").Text("Earlier, a status page was fetched.").Finish("stop").Response()
		case last.Role == "tool":
			return mockllm.NewStream("m").Reasoning("reasoning_content", marker+" ").Text("Fetched.").Finish("stop").Response()
		case len(req.Tools) > 0 && strings.Contains(last.Text(), "status page"):
			args := `{"url":"https://api.example.com/status","headers":{"Authorization":"Bearer ` + secret + `"}}`
			return mockllm.NewStream("m").Reasoning("reasoning_content", "I will call it, "+marker+". ").
				ToolCalls(5, mockllm.Call{ID: "call_1", Name: "http_get", Arguments: args}).Finish("tool_calls").Response()
		}
		return mockllm.NewStream("m").Text(strings.Repeat("A long answer that fills the context window. ", 12)).Finish("stop").Response()
	})
	e := newEnv(t, script)
	e.cfg.Models[0].ContextTokens = 400
	e.cfg.Routes = append(e.cfg.Routes, config.Route{Name: "summarize", Targets: e.cfg.Routes[0].Targets})
	e.cfg.History.SummaryRoute = "summarize"
	var logs syncBuffer
	log := zerolog.New(&logs).Level(zerolog.DebugLevel)
	e.startWorkerWith(func(o *worker.Options) { o.Log = log })
	var toolGot string
	e.serveTools(map[string]toolworker.Handler{"http_get": func(_ context.Context, c wire.ToolCall) (toolworker.Result, error) {
		mu.Lock()
		toolGot = c.Arguments
		mu.Unlock()
		return toolworker.Result{Content: "status: green"}, nil
	}}, toolworker.WithLogger(log))

	httpGet := wire.Tool{Name: "http_get", Parameters: map[string]any{"type": "object", "properties": map[string]any{
		"url": map[string]any{"type": "string"}, "headers": map[string]any{"type": "object"}}}}
	c := e.client()
	prompts := []string{"Fetch the status page with my key.", "Tell me more.", "And more.", "And even more."}
	for i, p := range prompts {
		ctx := ctxFor(t)
		turn, err := c.Submit(ctx, wire.TurnRequest{SessionID: "rc", TurnID: fmt.Sprintf("t%d", i+1),
			Input: []wire.InputMessage{{Role: wire.RoleUser, Content: p}}, Tools: []wire.Tool{httpGet}})
		if err != nil {
			t.Fatal(err)
		}
		if res, err := turn.Wait(ctx); err != nil || res.Terminal.Type != wire.EventTurnCompleted {
			t.Fatalf("turn %d: %+v, %v", i+1, res.Terminal, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(toolGot, secret) {
		t.Errorf("the tool got %q; want the faithful arguments", toolGot)
	}
	if len(summaryInputs) == 0 {
		t.Fatal("no summarization request: the first turn was never compressed")
	}
	leaks := func(where string, data []byte) {
		t.Helper()
		for _, c := range []string{secret, marker} {
			if bytes.Contains(data, []byte(c)) {
				t.Errorf("%s carries %q", where, c)
			}
		}
	}
	for _, in := range summaryInputs {
		leaks("the compression input", in)
	}
	leaks("a log line", []byte(logs.String()))
	_, events := records[wire.SessionEvent](t, e.js, wire.StreamEvents, "turn.event.rc")
	for _, m := range events {
		leaks("an event", m.Data())
	}
	messages, msgs := records[wire.Message](t, e.js, wire.StreamMessages, "turn.message.rc")
	for _, m := range msgs {
		leaks("a public message", m.Data())
	}
	if calls := messages[1].ToolCalls; len(calls) != 1 || !calls[0].ArgumentsRedacted || !strings.Contains(calls[0].Arguments, "[REDACTED]") {
		t.Errorf("stored call = %+v; want its arguments redacted and marked", calls)
	}
	for i := range prompts {
		_, chunks := records[wire.Chunk](t, e.js, wire.StreamChunks, fmt.Sprintf("turn.chunk.rc.t%d", i+1))
		for _, m := range chunks {
			leaks("a chunk", m.Data())
		}
	}
	conforms(t, e.js, "rc", "t1")
}

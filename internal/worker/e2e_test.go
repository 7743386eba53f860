package worker_test

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestTurnEndToEnd runs a whole turn through real NATS, a real worker, a real
// tool worker and the mock provider over HTTP: the model calls two tools in
// parallel, then answers with text.
func TestTurnEndToEnd(t *testing.T) {
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{Split: 3}))
	e.startWorker()
	e.serveTools(map[string]toolworker.Handler{"alpha": echoTool("alpha"), "beta": echoTool("beta")})
	ctx := ctxFor(t)

	turn, err := e.client().Submit(ctx, wire.TurnRequest{
		SessionID: "e2e", TurnID: "t1",
		Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "use both tools"}},
		Tools: []wire.Tool{tool("alpha"), tool("beta")},
	})
	if err != nil {
		t.Fatalf("Submit() = %v", err)
	}
	res, err := turn.Wait(ctx)
	if err != nil {
		t.Fatalf("Wait() = %v", err)
	}
	if res.Terminal.Type != wire.EventTurnCompleted {
		t.Fatalf("terminal = %s %v; want %s", res.Terminal.Type, res.Terminal.Payload, wire.EventTurnCompleted)
	}

	// The session log, as stored: user, assistant with two calls, both
	// results correlated by the normalized ids, final text.
	log, _ := records[wire.Message](t, e.js, wire.StreamMessages, "turn.message.e2e")
	roles := ""
	for _, m := range log {
		roles += string(m.Role) + " "
	}
	if want := "user assistant tool tool assistant "; roles != want {
		t.Fatalf("session log roles = %q; want %q", roles, want)
	}
	for i, m := range log {
		if m.Seq != uint64(i+1) || m.SessionID != "e2e" || m.TurnID != "t1" {
			t.Errorf("log[%d] = seq %d session %s turn %s; want seq %d e2e t1", i, m.Seq, m.SessionID, m.TurnID, i+1)
		}
	}
	calls := log[1].ToolCalls
	if len(calls) != 2 || calls[0].Name != "alpha" || calls[1].Name != "beta" {
		t.Fatalf("assistant tool calls = %+v; want alpha and beta", calls)
	}
	if log[1].FinishReason != wire.FinishToolCalls {
		t.Errorf("assistant finish = %q; want tool_calls", log[1].FinishReason)
	}
	for i, c := range calls {
		var args map[string]any
		if err := json.Unmarshal([]byte(c.Arguments), &args); err != nil {
			t.Errorf("call %s arguments %q do not parse: %v", c.Name, c.Arguments, err)
		}
		r := log[2+i]
		if r.ToolCallID != c.ID {
			t.Errorf("result %d answers %q; want %q", i, r.ToolCallID, c.ID)
		}
		if want := c.Name + " got " + c.Arguments; r.Content != want || r.IsError || r.Synthesized {
			t.Errorf("result %d = %q (error %v, synthesized %v); want %q", i, r.Content, r.IsError, r.Synthesized, want)
		}
	}
	final := log[4]
	if final.FinishReason != wire.FinishStop || final.Content == "" || len(final.ToolCalls) != 0 {
		t.Errorf("final = %+v; want text with finish stop", final)
	}
	if res.Text != final.Content {
		t.Errorf("Result.Text = %q; want %q", res.Text, final.Content)
	}

	// The second provider request replays the calls and results natively
	// with the normalized ids.
	reqs := e.mock.Requests()
	if len(reqs) != 2 {
		t.Fatalf("provider requests = %d; want 2", len(reqs))
	}
	second := reqs[1].Messages
	if len(second) != 4 || second[1].Role != "assistant" || len(second[1].ToolCalls) != 2 || second[2].ToolCallID != calls[0].ID || second[3].ToolCallID != calls[1].ID {
		t.Errorf("second request messages = %+v; want user, assistant with both calls, both results", second)
	}

	// Chunks carry step and attempt, in headers and body, and every attempt
	// ends with a marker. Each frame's chunk carries its normalized delta
	// only; the frame's bytes are its raw frame on TURN_RAW, under the same
	// step, attempt and seq.
	chunks, msgs := records[wire.Chunk](t, e.js, wire.StreamChunks, "turn.chunk.e2e.t1")
	raws := rawFrames(t, e.js, "e2e", "t1")
	type at struct{ step, attempt, seq int }
	rawAt := map[at]wire.RawFrame{}
	for _, f := range raws {
		rawAt[at{f.Step, f.Attempt, f.Seq}] = f
	}
	frames := 0
	markers := map[int]string{}
	for i, c := range chunks {
		h := msgs[i].Headers()
		if h.Get(wire.HeaderStep) != strconv.Itoa(c.Step) || h.Get(wire.HeaderAttempt) != strconv.Itoa(c.Attempt) || h.Get(wire.HeaderSeq) != strconv.Itoa(c.Seq) {
			t.Errorf("chunk %d headers %v disagree with body step %d attempt %d seq %d", i, h, c.Step, c.Attempt, c.Seq)
		}
		if c.Step < 1 || c.Step > 2 || c.Attempt != 1 {
			t.Errorf("chunk %d: step %d attempt %d; want step 1 or 2, attempt 1", i, c.Step, c.Attempt)
		}
		var body map[string]any
		if err := json.Unmarshal(msgs[i].Data(), &body); err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
		if _, ok := body["raw"]; ok || body["raw_text"] != nil {
			t.Errorf("chunk %d = %s; want no provider bytes", i, msgs[i].Data())
		}
		if c.Marker != "" {
			markers[c.Step] = c.Marker
			if _, ok := rawAt[at{c.Step, c.Attempt, c.Seq}]; ok {
				t.Errorf("marker chunk %d has a raw frame; want markers on TURN_CHUNKS only", i)
			}
			continue
		}
		frames++
		f, ok := rawAt[at{c.Step, c.Attempt, c.Seq}]
		if !ok || len(f.Bytes) == 0 || f.Provider != c.Provider || f.Model != c.Model || f.Event != c.Event {
			t.Errorf("chunk %d (%s) has raw frame %+v, %v; want the frame's bytes under its step, attempt, seq and target", i, msgs[i].Data(), f, ok)
		}
	}
	if len(raws) != frames || frames == 0 {
		t.Errorf("raw frames = %d; want one per frame chunk (%d)", len(raws), frames)
	}
	if markers[1] != wire.MarkerCompleted || markers[2] != wire.MarkerCompleted {
		t.Errorf("attempt markers = %v; want completed for steps 1 and 2", markers)
	}

	// Exactly one terminal event, last; one event per decision.
	events, _ := records[wire.SessionEvent](t, e.js, wire.StreamEvents, "turn.event.e2e")
	n := countTypes(events)
	terminals := n[wire.EventTurnCompleted] + n[wire.EventTurnFailed] + n[wire.EventTurnRejected]
	if terminals != 1 || !events[len(events)-1].Terminal() {
		t.Errorf("terminal events = %d (last %s); want exactly 1, last", terminals, events[len(events)-1].Type)
	}
	conforms(t, e.js, "e2e", "t1")
	want := map[string]int{
		wire.EventTurnAccepted: 1, wire.EventLLMRequest: 2, wire.EventLLMFinish: 2,
		wire.EventToolDispatched: 2, wire.EventToolResult: 2, wire.EventTurnCompleted: 1,
	}
	for typ, count := range want {
		if n[typ] != count {
			t.Errorf("events of type %s = %d; want %d (all: %v)", typ, n[typ], count, n)
		}
	}
}

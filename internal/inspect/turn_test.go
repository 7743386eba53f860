package inspect

import (
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/wire"
)

var t0 = time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func ev(ms int, typ string, step, attempt int, payload map[string]any) Stored[wire.SessionEvent] {
	return Stored[wire.SessionEvent]{Record: wire.SessionEvent{Type: typ, SessionID: "s", TurnID: "t", Step: step, Attempt: attempt, Time: at(ms), Payload: payload}, Time: at(ms)}
}

func chunk(ms, step, attempt int, marker, failure string) Stored[wire.Chunk] {
	return Stored[wire.Chunk]{Record: wire.Chunk{SessionID: "s", TurnID: "t", Step: step, Attempt: attempt, Provider: "p", Model: "m", Marker: marker, Failure: failure}, Time: at(ms)}
}

// TestBuildTurn lays out a turn whose first attempt was retried and whose
// tool call was repaired at its deadline, then failed.
func TestBuildTurn(t *testing.T) {
	target := map[string]any{"provider": "p", "model": "m"}
	rec := Records{
		Events: []Stored[wire.SessionEvent]{
			ev(0, wire.EventTurnAccepted, 0, 0, nil),
			ev(1, wire.EventLLMRequest, 1, 1, target),
			ev(5, wire.EventLLMRetry, 1, 1, map[string]any{"provider": "p", "model": "m", "class": "server", "http_status": float64(503)}),
			ev(10, wire.EventLLMRequest, 1, 2, target),
			ev(20, wire.EventLLMFinish, 1, 2, map[string]any{"provider": "p", "model": "m", "outcome": "completed", "finish_reason": "tool_calls",
				"duration_ms": float64(10), "input_tokens": float64(7), "output_tokens": float64(3)}),
			ev(21, wire.EventToolDispatched, 1, 0, map[string]any{"tool": "slow", "call_id": "c1"}),
			ev(1021, wire.EventToolRepaired, 1, 0, map[string]any{"tool": "slow", "call_id": "c1", "reason": "deadline_exceeded"}),
			ev(1030, wire.EventTurnFailed, 0, 0, map[string]any{"reason": "repeated_tool_failures"}),
		},
		Chunks: []Stored[wire.Chunk]{
			chunk(2, 1, 1, "", ""), chunk(5, 1, 1, wire.MarkerRetrying, "server"),
			chunk(11, 1, 2, "", ""), chunk(12, 1, 2, "", ""), chunk(20, 1, 2, wire.MarkerCompleted, ""),
		},
		Messages: []Stored[wire.Message]{
			{Record: wire.Message{TurnID: "t", Seq: 1, Role: wire.RoleUser, Content: "secret prompt"}, Time: at(0)},
			{Record: wire.Message{TurnID: "t", Seq: 2, Step: 1, Role: wire.RoleAssistant, ToolCalls: []wire.Call{{ID: "c1", Name: "slow", Arguments: `{"secret":1}`}},
				Usage: &wire.Usage{InputTokens: 7, OutputTokens: 3}}, Time: at(20)},
			{Record: wire.Message{TurnID: "t", Seq: 3, Step: 1, Role: wire.RoleTool, ToolCallID: "c1", IsError: true, Synthesized: true, Content: "timed out"}, Time: at(1021)},
		},
	}
	got := BuildTurn("s", "t", rec)
	if got.Outcome != wire.EventTurnFailed || got.Reason != "repeated_tool_failures" || got.Duration != 1030*time.Millisecond {
		t.Errorf("BuildTurn() outcome %q (%q) after %s; want turn.failed (repeated_tool_failures) after 1.03s", got.Outcome, got.Reason, got.Duration)
	}
	if got.Usage != (wire.Usage{InputTokens: 7, OutputTokens: 3}) {
		t.Errorf("BuildTurn() usage = %+v; want the assistant message's", got.Usage)
	}
	if len(got.Steps) != 1 {
		t.Fatalf("BuildTurn() has %d steps; want 1", len(got.Steps))
	}
	s := got.Steps[0]
	wantAttempts := []Attempt{
		{Attempt: 1, Provider: "p", Model: "m", Marker: wire.MarkerRetrying, Failure: "server", HTTPStatus: 503, Chunks: 2},
		{Attempt: 2, Provider: "p", Model: "m", Marker: wire.MarkerCompleted, FinishReason: "tool_calls", Chunks: 3, Duration: 10 * time.Millisecond,
			Usage: &wire.Usage{InputTokens: 7, OutputTokens: 3}},
	}
	if len(s.Attempts) != len(wantAttempts) {
		t.Fatalf("BuildTurn() attempts = %+v; want %+v", s.Attempts, wantAttempts)
	}
	for i, a := range s.Attempts {
		w := wantAttempts[i]
		if (a.Usage == nil) != (w.Usage == nil) || a.Usage != nil && *a.Usage != *w.Usage {
			t.Errorf("attempt %d usage = %v; want %v", a.Attempt, a.Usage, w.Usage)
		}
		a.Usage, w.Usage = nil, nil
		if a != w {
			t.Errorf("attempt %d = %+v; want %+v", i+1, a, w)
		}
	}
	if want := []ToolCall{{CallID: "c1", Tool: "slow", Outcome: CallRepaired, Reason: "deadline_exceeded", Duration: time.Second}}; len(s.ToolCalls) != 1 || s.ToolCalls[0] != want[0] {
		t.Errorf("BuildTurn() tool calls = %+v; want %+v", s.ToolCalls, want)
	}
	if n := len(got.Timeline); n != len(rec.Events)+len(rec.Messages)+2 { // two markers
		t.Errorf("BuildTurn() timeline has %d entries; want every event and message, and the 2 markers", n)
	}

	var b strings.Builder
	if err := WriteTurn(&b, got); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"outcome  turn.failed (repeated_tool_failures) after 1.03s",
		"attempt 1  p/m  retrying (server, HTTP 503)",
		"attempt 2  p/m  completed",
		"tool slow  c1   repaired (deadline_exceeded)  1s",
		"marker=retrying", "failure=server", "synthesized=true",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("WriteTurn() lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "secret") || strings.Contains(out, "timed out") {
		t.Errorf("WriteTurn() printed content:\n%s", out)
	}
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/demotools"
	"github.com/turnstream/turnstream/internal/inspect"
	"github.com/turnstream/turnstream/internal/stack"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/wire"
)

// recordTurn runs a turn of the demo prompt with the demo tools on st to
// its end and returns what the client saw.
func recordTurn(t *testing.T, st *stack.Stack, session, turn string) *client.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), cmdWait)
	defer cancel()
	c, err := client.New(st.Conn)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := c.Submit(ctx, wire.TurnRequest{SessionID: session, TurnID: turn, Tools: demotools.Tools(),
		Input: []wire.InputMessage{{Role: wire.RoleUser, Content: defaultPrompt}}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	res, err := tr.Wait(ctx)
	if err != nil || res.Terminal.Type != wire.EventTurnCompleted {
		t.Fatalf("recorded turn: %+v, %v; want it completed", res, err)
	}
	return res
}

// TestInspectTurn inspects a recorded turn with two tool calls, as text
// and as JSON: its steps, attempts and their markers, tool calls, events,
// usage and outcome; and its session.
func TestInspectTurn(t *testing.T) {
	st := startStack(t, stack.Options{})
	res := recordTurn(t, st, "insp", "tool-turn")
	recordTurn(t, st, "insp", "second")

	out, err := run(t, "inspect", "turn", "insp", "tool-turn", "--nats-url", st.NATSURL)
	if err != nil {
		t.Fatalf("inspect turn: %v\n%s", err, out)
	}
	for _, want := range []string{
		"turn tool-turn of session insp\n",
		"  outcome  turn.completed after ",
		"step 1\n", "step 2\n",
		"mock/mock-1", "completed  tool_calls", "completed  stop",
		"tool get_time", "tool calculate", "  ok  ",
		"\ntimeline\n",
		"turn.accepted", "llm/request", "llm/finish", "chunk marker", "marker=completed",
		"tool.dispatched", "tool.result", "message assistant", "message tool",
		"turn.completed ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect turn output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "391") || strings.Contains(out, "17 * 23") {
		t.Errorf("inspect turn printed content (a tool's arguments or result):\n%s", out)
	}
	if i, j := strings.LastIndex(out, "turn.completed "), strings.LastIndex(out, "marker=completed"); i < j {
		t.Errorf("inspect turn's timeline has a record after the terminal event:\n%s", out)
	}

	out, err = run(t, "inspect", "--json", "turn", "insp", "tool-turn", "--nats-url", st.NATSURL)
	if err != nil {
		t.Fatalf("inspect --json turn: %v\n%s", err, out)
	}
	var got inspect.Turn
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("inspect --json turn printed %q: %v", out, err)
	}
	if got.Outcome != wire.EventTurnCompleted || len(got.Steps) != 2 {
		t.Fatalf("inspect --json turn: outcome %q, %d steps; want turn.completed, 2 steps", got.Outcome, len(got.Steps))
	}
	var calls []string
	for _, s := range got.Steps {
		if len(s.Attempts) != 1 || s.Attempts[0].Marker != wire.MarkerCompleted || s.Attempts[0].Chunks == 0 || s.Attempts[0].Usage == nil {
			t.Errorf("step %d attempts = %+v; want one completed attempt with its chunks and usage", s.Step, s.Attempts)
		}
		for _, c := range s.ToolCalls {
			if c.Outcome != inspect.CallOK {
				t.Errorf("tool call %+v; want ok", c)
			}
			calls = append(calls, c.Tool)
		}
	}
	if strings.Join(calls, ",") != "get_time,calculate" {
		t.Errorf("inspect --json turn tool calls = %q; want get_time,calculate", calls)
	}
	var want wire.Usage
	for _, m := range res.Messages {
		if m.Usage != nil {
			want.Add(*m.Usage)
		}
	}
	if got.Usage != want || want.InputTokens == 0 {
		t.Errorf("inspect --json turn usage = %+v; want %+v, the messages' sum", got.Usage, want)
	}
	if n := len(got.Timeline); n == 0 || got.Timeline[n-1].Event == nil || got.Timeline[n-1].Event.Type != wire.EventTurnCompleted {
		t.Errorf("inspect --json turn's timeline does not end with turn.completed: %+v", got.Timeline)
	}

	out, err = run(t, "inspect", "session", "insp", "--nats-url", st.NATSURL)
	if err != nil {
		t.Fatalf("inspect session: %v\n%s", err, out)
	}
	if !strings.HasPrefix(out, "session insp: 2 turns, 10 messages\n") || !strings.Contains(out, "tool-turn  turn.completed  2      2           5") ||
		strings.Index(out, "tool-turn") > strings.Index(out, "second") {
		t.Errorf("inspect session printed\n%s\nwant both turns, in order, with their steps, tool calls and messages", out)
	}

	_, err = run(t, "inspect", "turn", "insp", "nope", "--nats-url", st.NATSURL)
	if !errors.Is(err, inspect.ErrNotFound) {
		t.Errorf("inspect turn of an unknown turn = %v; want ErrNotFound", err)
	}
}

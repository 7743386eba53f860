package turn

import (
	"testing"

	"github.com/turnstream/turnstream/internal/history"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestNext: the loop's next move follows from the session log and the
// budgets alone.
func TestNext(t *testing.T) {
	b := Budgets{MaxIterations: 3, MaxToolCalls: 2, MaxRepeatedToolFailures: 1}
	user := wire.Message{TurnID: "t", Role: wire.RoleUser, Content: "q"}
	answer := wire.Message{TurnID: "t", Role: wire.RoleAssistant, Step: 1, Content: "a", FinishReason: wire.FinishStop}
	call := func(step int, ids ...string) wire.Message {
		m := wire.Message{TurnID: "t", Role: wire.RoleAssistant, Step: step, FinishReason: wire.FinishToolCalls}
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, wire.Call{ID: id, Name: "tool", Arguments: "{}"})
		}
		return m
	}
	result := func(id, content string, isErr bool) wire.Message {
		return wire.Message{TurnID: "t", Role: wire.RoleTool, ToolCallID: id, Content: content, IsError: isErr}
	}
	cut := wire.Message{TurnID: "t", Role: wire.RoleAssistant, Step: 1, Content: "half", FinishReason: wire.FinishLength}
	for _, tc := range []struct {
		name   string
		log    []wire.Message
		want   actionKind
		calls  int
		budget string
	}{
		{"fresh turn asks the provider", []wire.Message{user}, actStep, 0, ""},
		{"an answer finishes", []wire.Message{user, answer}, actFinish, 0, ""},
		{"pending calls run", []wire.Message{user, call(1, "a", "b")}, actRunTools, 2, ""},
		{"answered calls go back to the provider", []wire.Message{user, call(1, "a"), result("a", "ok", false)}, actStep, 0, ""},
		{"a resumed round runs only the unanswered call", []wire.Message{user, call(1, "a", "b"), result("a", "ok", false)}, actRunTools, 1, ""},
		{"too many calls are closed", []wire.Message{user, call(1, "a", "b", "c")}, actCloseCalls, 3, BudgetToolCalls},
		{"repeated failures end the turn", []wire.Message{user, call(1, "a"), result("a", "boom", true), call(2, "b"), result("b", "boom", true)}, actExceeded, 0, BudgetRepeatedFailures},
		{"the iteration budget ends the turn", []wire.Message{user, call(1, "a"), result("a", "1", false), call(2, "b"), result("b", "2", false)}, actStep, 0, ""},
		{"a length cut continues", []wire.Message{user, cut}, actStep, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := next(history.StateOf(tc.log, "t"), b)
			if a.kind != tc.want || len(a.calls) != tc.calls || a.budget != tc.budget {
				t.Errorf("next() = kind %d, %d calls, budget %q; want kind %d, %d calls, budget %q", a.kind, len(a.calls), a.budget, tc.want, tc.calls, tc.budget)
			}
		})
	}
	// Three steps spent: the budget, not another step.
	log := []wire.Message{user, call(1, "a"), result("a", "1", false), call(2, "b"), result("b", "2", false), call(3, "c"), result("c", "3", false)}
	if a := next(history.StateOf(log, "t"), Budgets{MaxIterations: 3, MaxToolCalls: 5, MaxRepeatedToolFailures: 5}); a.kind != actExceeded || a.budget != BudgetIterations {
		t.Errorf("next() after 3 steps = %+v; want the iteration budget", a)
	}
}

package history

import (
	"reflect"
	"testing"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaichat"

	"github.com/turnstream/turnstream/pkg/wire"
)

func TestStateOf(t *testing.T) {
	calls := []wire.Call{{ID: "a", Name: "x", Arguments: "{}"}, {ID: "b", Name: "y", Arguments: "{}"}}
	prior := []wire.Message{
		{TurnID: "t0", Role: wire.RoleUser},
		{TurnID: "t0", Step: 1, Role: wire.RoleAssistant, Content: "old"},
	}
	tests := []struct {
		name    string
		log     []wire.Message
		start   int
		inputs  int
		steps   int
		calls   int
		done    bool
		pending []string
	}{
		{"new turn", prior, 2, 0, 0, 0, false, nil},
		{"input appended", append(prior[:2:2], wire.Message{TurnID: "t1", Role: wire.RoleUser}), 2, 1, 0, 0, false, nil},
		{"waiting for both results", append(prior[:2:2],
			wire.Message{TurnID: "t1", Role: wire.RoleUser},
			wire.Message{TurnID: "t1", Step: 1, Role: wire.RoleAssistant, ToolCalls: calls}), 2, 1, 1, 2, false, []string{"a", "b"}},
		{"one result in", append(prior[:2:2],
			wire.Message{TurnID: "t1", Role: wire.RoleUser},
			wire.Message{TurnID: "t1", Step: 1, Role: wire.RoleAssistant, ToolCalls: calls},
			wire.Message{TurnID: "t1", Step: 1, Role: wire.RoleTool, ToolCallID: "b"}), 2, 1, 1, 2, false, []string{"a"}},
		{"answered", append(prior[:2:2],
			wire.Message{TurnID: "t1", Role: wire.RoleUser},
			wire.Message{TurnID: "t1", Step: 1, Role: wire.RoleAssistant, ToolCalls: calls},
			wire.Message{TurnID: "t1", Step: 1, Role: wire.RoleTool, ToolCallID: "a"},
			wire.Message{TurnID: "t1", Step: 1, Role: wire.RoleTool, ToolCallID: "b"},
			wire.Message{TurnID: "t1", Step: 2, Role: wire.RoleAssistant, Content: "done"}), 2, 1, 2, 2, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := StateOf(tt.log, "t1")
			var pending []string
			for _, c := range st.Pending() {
				pending = append(pending, c.ID)
			}
			got := []any{st.Start, st.Inputs, st.Steps, st.ToolCalls, st.Done(), pending}
			want := []any{tt.start, tt.inputs, tt.steps, tt.calls, tt.done, tt.pending}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("StateOf() start, inputs, steps, calls, done, pending = %v; want %v", got, want)
			}
		})
	}
}

// project renders log as the current turn "t" for a native OpenAI-style
// destination.
func project(log []wire.Message) []provider.Message {
	sel := Select(log, "t", 1<<30)
	p, _ := NewProjection(&sel, States{}, Options{}).Project(provider.Destination{
		Target: provider.Target{Provider: "p", Model: "m"}, API: openaichat.API.Name, Replay: openaichat.API.Replay,
		Model: provider.Model{Name: "m", Capabilities: openaichat.API.Capabilities},
	})
	return p.Messages
}

func TestMessagesKeepsRequestShapeOnly(t *testing.T) {
	log := []wire.Message{{SessionID: "s", TurnID: "t", Step: 1, Seq: 4, Role: wire.RoleAssistant, Content: "hi",
		ToolCalls: []wire.Call{{ID: "a", Name: "x", Arguments: `{"k":1}`}}, Provider: "p", Model: "m", Usage: &wire.Usage{InputTokens: 3}},
		{SessionID: "s", TurnID: "t", Step: 1, Role: wire.RoleTool, ToolCallID: "a", Content: "r"}}
	got := project(log)
	if len(got) != 2 || got[0].Role != wire.RoleAssistant || got[0].Content != "hi" || len(got[0].ToolCalls) != 1 || got[0].ToolCalls[0].Arguments != `{"k":1}` {
		t.Errorf("Messages() = %+v; want role, content and calls only", got)
	}
}

func TestMessagesJoinsContinuedAnswers(t *testing.T) {
	log := []wire.Message{
		{TurnID: "t", Role: wire.RoleUser, Content: "write"},
		{TurnID: "t", Step: 1, Role: wire.RoleAssistant, Content: "Once upon ", FinishReason: wire.FinishLength},
		{TurnID: "t", Step: 2, Role: wire.RoleAssistant, Content: "a time.", FinishReason: wire.FinishStop},
		{TurnID: "u", Role: wire.RoleUser, Content: "again"},
	}
	got := project(log)
	if len(got) != 3 || got[1].Content != "Once upon a time." || got[2].Content != "again" {
		t.Errorf("Messages() = %+v; want the continued answer joined into one assistant message", got)
	}
	// Mid-continuation: the cut answer is the last message, as is.
	got = project(log[:2])
	if len(got) != 2 || got[1].Content != "Once upon " {
		t.Errorf("Messages(cut) = %+v; want the cut answer last", got)
	}
	st := StateOf(log[:2], "t")
	if !st.Continuing() || st.Done() {
		t.Errorf("StateOf(cut): Continuing %v Done %v; want true, false", st.Continuing(), st.Done())
	}
	st = StateOf(log[:3], "t")
	if st.Continuing() || !st.Done() || st.Steps != 2 {
		t.Errorf("StateOf(continued): Continuing %v Done %v Steps %d; want false, true, 2", st.Continuing(), st.Done(), st.Steps)
	}
}

func TestMessagesReplaysUnparseableCallsAsPlaceholders(t *testing.T) {
	log := []wire.Message{
		{TurnID: "t", Step: 1, Role: wire.RoleAssistant, ToolCalls: []wire.Call{
			{ID: "a", Name: "read", Arguments: `{"path":"x"}`},
			{ID: "b", Name: "read", Arguments: `{"path":`},
			{ID: "c", Name: "functions.read:0", Arguments: `{}`},
			{ID: "d", Name: "read", Arguments: `[1]`},
		}},
		{TurnID: "t", Step: 1, Role: wire.RoleTool, ToolCallID: "a", Content: "ok"},
		{TurnID: "t", Step: 1, Role: wire.RoleTool, ToolCallID: "b", Content: "error: not JSON", IsError: true},
		{TurnID: "t", Step: 1, Role: wire.RoleTool, ToolCallID: "c", Content: "error", IsError: true},
		{TurnID: "t", Step: 1, Role: wire.RoleTool, ToolCallID: "d", Content: "error", IsError: true},
	}
	got := project(log)[0].ToolCalls
	want := []wire.Call{
		{ID: "a", Name: "read", Arguments: `{"path":"x"}`},
		{ID: "b", Name: UnparseableCall, Arguments: "{}"},
		{ID: "c", Name: UnparseableCall, Arguments: "{}"},
		{ID: "d", Name: UnparseableCall, Arguments: "{}"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Messages() calls = %+v; want %+v", got, want)
	}
	if log[0].ToolCalls[1].Name != "read" {
		t.Errorf("Messages() changed the session log it read")
	}
}

func TestRepeatedFailures(t *testing.T) {
	call := func(id string) wire.Message {
		return wire.Message{TurnID: "t", Step: 1, Role: wire.RoleAssistant, ToolCalls: []wire.Call{{ID: id, Name: "flaky", Arguments: "{}"}}}
	}
	fail := func(id, text string) wire.Message {
		return wire.Message{TurnID: "t", Step: 1, Role: wire.RoleTool, ToolCallID: id, Content: text, IsError: true}
	}
	log := []wire.Message{{TurnID: "t", Role: wire.RoleUser}, call("1"), fail("1", "boom"), call("2"), fail("2", "boom"), call("3"), fail("3", "other")}
	st := StateOf(log, "t")
	if got := st.RepeatedFailures(); got != 2 {
		t.Errorf("RepeatedFailures() = %d; want 2 (boom twice)", got)
	}
}

package history

import (
	"reflect"
	"testing"

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

func TestMessagesKeepsRequestShapeOnly(t *testing.T) {
	log := []wire.Message{{SessionID: "s", TurnID: "t", Step: 1, Seq: 4, Role: wire.RoleAssistant, Content: "hi",
		ToolCalls: []wire.Call{{ID: "a", Name: "x", Arguments: `{"k":1}`}}, Provider: "p", Model: "m", Usage: &wire.Usage{InputTokens: 3}}}
	got := Messages(log)
	if len(got) != 1 || got[0].Role != wire.RoleAssistant || got[0].Content != "hi" || len(got[0].ToolCalls) != 1 || got[0].ToolCalls[0].Arguments != `{"k":1}` {
		t.Errorf("Messages() = %+v; want role, content and calls only", got)
	}
}

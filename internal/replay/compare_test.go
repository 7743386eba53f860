package replay_test

import (
	"slices"
	"testing"

	"github.com/turnstream/turnstream/internal/replay"
	"github.com/turnstream/turnstream/pkg/wire"
)

func TestCompare(t *testing.T) {
	recorded := []wire.Message{
		{Step: 0, Role: wire.RoleUser, Content: "weather?"},
		{Step: 1, Role: wire.RoleAssistant, ToolCalls: []wire.Call{{ID: "call_1", Name: "lookup", Arguments: `{"city":"Paris"}`}},
			FinishReason: wire.FinishToolCalls, RawFinishReason: "tool_calls", Provider: "p", Model: "m", Usage: &wire.Usage{InputTokens: 3, OutputTokens: 2}},
		{Step: 1, Role: wire.RoleTool, ToolCallID: "call_1", Content: "sunny"},
		{Step: 2, Role: wire.RoleAssistant, Content: "It is sunny.", FinishReason: wire.FinishStop, Provider: "p", Model: "m"},
	}
	events := []wire.SessionEvent{{Type: wire.EventTurnAccepted}, {Type: wire.EventToolDispatched}, {Type: wire.EventToolResult}, {Type: wire.EventTurnCompleted}}
	tests := []struct {
		name   string
		msgs   func([]wire.Message) []wire.Message
		events func([]wire.SessionEvent) []wire.SessionEvent
		want   []replay.Divergence
	}{
		{name: "same turn", want: nil},
		{name: "times and log positions are not compared",
			msgs: func(m []wire.Message) []wire.Message {
				m[1].Seq, m[1].Time, m[2].ContentRedacted = 9, m[1].Time.AddDate(1, 0, 0), true
				return m
			}},
		{name: "tool arguments",
			msgs: func(m []wire.Message) []wire.Message { m[1].ToolCalls[0].Arguments = `{"city":"Rome"}`; return m },
			want: []replay.Divergence{{Where: "message 2 (assistant, step 1)", Field: "tool_calls",
				Recorded: `call_1 lookup({"city":"Paris"})`, Replayed: `call_1 lookup({"city":"Rome"})`}}},
		{name: "tool result",
			msgs: func(m []wire.Message) []wire.Message { m[2].Content, m[2].IsError = "boom", true; return m },
			want: []replay.Divergence{
				{Where: "message 3 (tool, step 1)", Field: "content", Recorded: `"sunny"`, Replayed: `"boom"`},
				{Where: "message 3 (tool, step 1)", Field: "is_error", Recorded: "false", Replayed: "true"},
			}},
		{name: "finish reason and target",
			msgs: func(m []wire.Message) []wire.Message {
				m[3].FinishReason, m[3].Model = wire.FinishLength, "m2"
				return m
			},
			want: []replay.Divergence{
				{Where: "message 4 (assistant, step 2)", Field: "finish_reason", Recorded: `"stop"`, Replayed: `"length"`},
				{Where: "message 4 (assistant, step 2)", Field: "target", Recorded: "p/m", Replayed: "p/m2"},
			}},
		{name: "a message missing",
			msgs: func(m []wire.Message) []wire.Message { return m[:3] },
			want: []replay.Divergence{{Where: "messages", Field: "count", Recorded: "4", Replayed: "3"}}},
		{name: "event types",
			events: func(e []wire.SessionEvent) []wire.SessionEvent {
				e[2].Type = wire.EventToolRepaired
				return e
			},
			want: []replay.Divergence{{Where: "events", Field: "types from event 3",
				Recorded: "[tool.result turn.completed]", Replayed: "[tool.repaired turn.completed]"}}},
		{name: "an event missing",
			events: func(e []wire.SessionEvent) []wire.SessionEvent { return e[:3] },
			want:   []replay.Divergence{{Where: "events", Field: "types from event 4", Recorded: "[turn.completed]", Replayed: "[]"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs, evs := clone(recorded), slices.Clone(events)
			if tt.msgs != nil {
				msgs = tt.msgs(msgs)
			}
			if tt.events != nil {
				evs = tt.events(evs)
			}
			if got := replay.Compare(recorded, msgs, events, evs); !slices.Equal(got, tt.want) {
				t.Errorf("Compare() = %v; want %v", got, tt.want)
			}
		})
	}
}

// clone copies messages deep enough for a test to edit their calls.
func clone(msgs []wire.Message) []wire.Message {
	out := slices.Clone(msgs)
	for i := range out {
		out[i].ToolCalls = slices.Clone(out[i].ToolCalls)
	}
	return out
}

package openaiwire_test

import (
	"encoding/json"
	"testing"

	"github.com/turnstream/turnstream/internal/provider/openaiwire"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestChatRequest: the wire types marshal to the Chat Completions shape,
// key order as declared, empty lists and descriptions omitted, a missing
// schema as the empty object schema.
func TestChatRequest(t *testing.T) {
	type msg struct {
		Role      string                    `json:"role"`
		ToolCalls []openaiwire.ChatToolCall `json:"tool_calls,omitempty"`
	}
	tests := []struct {
		name string
		req  openaiwire.ChatRequest[msg]
		want string
	}{
		{
			name: "no tools",
			req: openaiwire.ChatRequest[msg]{
				Model: "m", Messages: []msg{{Role: "user", ToolCalls: openaiwire.ChatToolCalls(nil)}},
				Tools: openaiwire.ChatTools(nil), Stream: true, StreamOptions: &openaiwire.StreamOptions{IncludeUsage: true},
			},
			want: `{"model":"m","messages":[{"role":"user"}],"stream":true,"stream_options":{"include_usage":true}}`,
		},
		{
			name: "tools and calls",
			req: openaiwire.ChatRequest[msg]{
				Model: "m",
				Messages: []msg{{Role: "assistant", ToolCalls: openaiwire.ChatToolCalls([]wire.Call{
					{ID: "c1", Name: "f", Arguments: `{"a":1}`}, {ID: "", Name: "g", Arguments: ""},
				})}},
				Tools: openaiwire.ChatTools([]wire.Tool{
					{Name: "f", Description: "F.", Parameters: map[string]any{"type": "object", "required": []any{"a"}}},
					{Name: "g"},
				}),
			},
			want: `{"model":"m","messages":[{"role":"assistant","tool_calls":[` +
				`{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},` +
				`{"id":"","type":"function","function":{"name":"g","arguments":""}}]}],` +
				`"tools":[{"type":"function","function":{"name":"f","description":"F.","parameters":{"required":["a"],"type":"object"}}},` +
				`{"type":"function","function":{"name":"g","parameters":{"properties":{},"type":"object"}}}],"stream":false}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.req)
			if err != nil || string(b) != tt.want {
				t.Errorf("json.Marshal(%s) = %s, %v; want %s", tt.name, b, err, tt.want)
			}
		})
	}
}

// TestToolParameters: a schema is kept as given; none is the empty object
// schema, a fresh one each time.
func TestToolParameters(t *testing.T) {
	p := map[string]any{"type": "object"}
	if got := openaiwire.ToolParameters(p); len(got) != 1 || got["type"] != "object" {
		t.Errorf("ToolParameters(%v) = %v; want it unchanged", p, got)
	}
	a := openaiwire.ToolParameters(nil)
	a["mutated"] = true
	if b, _ := json.Marshal(openaiwire.ToolParameters(nil)); string(b) != `{"properties":{},"type":"object"}` {
		t.Errorf("ToolParameters(nil) = %s; want the empty object schema", b)
	}
}

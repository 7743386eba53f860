package deepseek

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"path/filepath"
	"testing"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/providertest"
	"github.com/turnstream/turnstream/pkg/wire"
)

var update = flag.Bool("update", false, "rewrite the golden request bodies in testdata/requests")

var (
	// thinking is a thinking-mode model: its tool-call turns need the echo.
	thinking = provider.Model{Name: "deepseek-reasoner", ContextTokens: 131072, Capabilities: API.Capabilities}
	// plain is a model whose provider metadata does not ask for the echo.
	plain = provider.Model{Name: "deepseek-chat", ContextTokens: 131072, Capabilities: provider.Capabilities{Text: true, Streaming: true, Tools: true, NativeToolHistory: true}}
)

func str(s string) *string { return &s }

var weatherTool = wire.Tool{Name: "get_weather", Description: "Current weather in a city.", Parameters: map[string]any{
	"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"},
}}

// toolTurn is a thinking-mode tool-call turn whose echo is reasoning.
func toolTurn(reasoning *string) []provider.Message {
	return []provider.Message{
		{Role: wire.RoleUser, Content: "Weather in Paris and Tokyo?"},
		{Role: wire.RoleAssistant, Reasoning: reasoning, ToolCalls: []wire.Call{
			{ID: "call_00_ZbU2cV6cZtc5Dw8qkSPY7ZOX", Name: "get_weather", Arguments: `{"city": "Paris"}`},
			{ID: "call_01_Qm4hT9xLw2Rk7Vb3Np8sJd5F", Name: "get_weather", Arguments: `{"city": "Tokyo"}`},
		}},
		{Role: wire.RoleTool, ToolCallID: "call_00_ZbU2cV6cZtc5Dw8qkSPY7ZOX", Content: "18°C, cloudy"},
		{Role: wire.RoleTool, ToolCallID: "call_01_Qm4hT9xLw2Rk7Vb3Np8sJd5F", Content: "24°C, clear"},
	}
}

// TestPrepareGolden compares request bodies with testdata/requests/*.json
// (the body indented; key order and presence are compared as sent).
func TestPrepareGolden(t *testing.T) {
	tests := []struct {
		name  string
		req   *provider.Request
		model provider.Model
	}{
		{
			name:  "system_user",
			req:   &provider.Request{System: "You are terse.", Messages: []provider.Message{{Role: wire.RoleUser, Content: "Hi"}}},
			model: plain,
		},
		{
			name: "system_messages_hoisted",
			req: &provider.Request{System: "You are terse.", Messages: []provider.Message{
				{Role: wire.RoleSystem, Content: "Answer in French."},
				{Role: wire.RoleUser, Content: "Hi"},
				{Role: wire.RoleAssistant, Content: "Bonjour."},
				{Role: wire.RoleSystem, Content: "Never use emoji."},
				{Role: wire.RoleUser, Content: "How are you?"},
			}},
			model: plain,
		},
		{
			name: "consecutive_users_joined",
			req: &provider.Request{System: "You are terse.", Messages: []provider.Message{
				{Role: wire.RoleUser, Content: "First question."},
				{Role: wire.RoleUser, Content: "Second question."},
				{Role: wire.RoleUser, Content: ""},
				{Role: wire.RoleUser, Content: "Third."},
			}},
			model: plain,
		},
		{
			name:  "thinking_tool_call_echo",
			req:   &provider.Request{Messages: toolTurn(str("Two cities: call get_weather twice.")), Tools: []wire.Tool{weatherTool, {Name: "now"}}},
			model: thinking,
		},
		{
			name:  "thinking_tool_call_echo_empty",
			req:   &provider.Request{Messages: toolTurn(str("")), Tools: []wire.Tool{weatherTool}},
			model: thinking,
		},
		{
			name:  "thinking_tool_call_echo_nil",
			req:   &provider.Request{Messages: toolTurn(nil), Tools: []wire.Tool{weatherTool}},
			model: thinking,
		},
		{
			name: "plain_assistant_reasoning_absent",
			req: &provider.Request{Messages: []provider.Message{
				{Role: wire.RoleUser, Content: "What is six times seven?"},
				{Role: wire.RoleAssistant, Content: "42.", Reasoning: str("Six times seven is forty-two.")},
				{Role: wire.RoleUser, Content: "And plus one?"},
			}},
			model: thinking,
		},
		{
			name:  "no_reasoning_echo_model",
			req:   &provider.Request{Messages: toolTurn(str("Two cities: call get_weather twice.")), Tools: []wire.Tool{weatherTool}},
			model: plain,
		},
		{
			name: "tool_results_role_tool",
			req: &provider.Request{System: "Use tools.", Messages: []provider.Message{
				{Role: wire.RoleUser, Content: "Time in Paris, then Tokyo?"},
				{Role: wire.RoleAssistant, Content: "Checking Paris first.", Reasoning: str("Paris first."), ToolCalls: []wire.Call{
					{ID: "call_00_Aa1Bb2Cc3Dd4Ee5Ff6Gg7Hh8", Name: "get_time", Arguments: `{"tz":"Europe/Paris"}`},
				}},
				{Role: wire.RoleTool, ToolCallID: "call_00_Aa1Bb2Cc3Dd4Ee5Ff6Gg7Hh8", Content: "10:00"},
				{Role: wire.RoleAssistant, ToolCalls: []wire.Call{
					{ID: "call_00_Ii9Jj8Kk7Ll6Mm5Nn4Oo3Pp2", Name: "get_time", Arguments: `{"tz":"Asia/Tokyo"}`},
				}},
				// An internal user-role tool result is a tool message too.
				{Role: wire.RoleUser, ToolCallID: "call_00_Ii9Jj8Kk7Ll6Mm5Nn4Oo3Pp2", Content: "18:00"},
				{Role: wire.RoleUser, Content: "Thanks."},
				{Role: wire.RoleUser, Content: "Which is later?"},
			}, Tools: []wire.Tool{{Name: "get_time", Parameters: map[string]any{"type": "object", "properties": map[string]any{"tz": map[string]any{"type": "string"}}}}}},
			model: thinking,
		},
	}
	a := newAdapter(t, "http://127.0.0.1:1", Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := a.Prepare(tt.req, tt.model)
			if err != nil {
				t.Fatalf("Prepare() error = %v", err)
			}
			providertest.GoldenJSON(t, filepath.Join("testdata", "requests", tt.name+".json"), body, *update)
			again, err := a.Prepare(tt.req, tt.model)
			if err != nil || !bytes.Equal(again, body) {
				t.Errorf("Prepare(%s) again = %s, %v; want the same bytes", tt.name, again, err)
			}
		})
	}
}

// TestPrepareRejects: images anywhere fail before any message is
// serialized, and no body is produced.
func TestPrepareRejects(t *testing.T) {
	img := []string{"data:image/png;base64,iVBORw0KGgo="}
	tests := []struct {
		name string
		msgs []provider.Message
		want error
	}{
		{"image on the only user message", []provider.Message{{Role: wire.RoleUser, Content: "What is this?", Images: img}}, ErrImages},
		{
			"image on a user message to be joined",
			[]provider.Message{{Role: wire.RoleUser, Content: "Look:"}, {Role: wire.RoleUser, Images: img}},
			ErrImages,
		},
		{"image on a tool result", append(toolTurn(str("r"))[:2], provider.Message{Role: wire.RoleTool, ToolCallID: "call_00_ZbU2cV6cZtc5Dw8qkSPY7ZOX", Images: img}), ErrImages},
		{"image on a system message", []provider.Message{{Role: wire.RoleSystem, Content: "s", Images: img}, {Role: wire.RoleUser, Content: "hi"}}, ErrImages},
		{
			"image after an unknown role: images first",
			[]provider.Message{{Role: "narrator", Content: "x"}, {Role: wire.RoleUser, Content: "y", Images: img}},
			ErrImages,
		},
		{"unknown role", []provider.Message{{Role: "narrator", Content: "x"}}, ErrRole},
		{"empty role", []provider.Message{{Content: "x"}}, ErrRole},
	}
	a := newAdapter(t, "http://127.0.0.1:1", Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := a.Prepare(&provider.Request{System: "s", Messages: tt.msgs}, thinking)
			if body != nil {
				t.Errorf("Prepare() body = %q; want none", body)
			}
			var f *provider.Failure
			if !errors.As(err, &f) || f.Class != provider.ClassInvalidRequest || !errors.Is(err, tt.want) {
				t.Errorf("Prepare() error = %v; want INVALID_REQUEST wrapping %v", err, tt.want)
			}
			if f != nil && (bytes.Contains([]byte(f.Error()), []byte("What is this")) || f.Reason == "") {
				t.Errorf("Failure = %q (reason %q); want a content-free reason", f.Error(), f.Reason)
			}
		})
	}
}

// TestPrepareDoesNotMutate: joining never writes through to the request.
func TestPrepareDoesNotMutate(t *testing.T) {
	req := &provider.Request{System: "s", Messages: []provider.Message{
		{Role: wire.RoleUser, Content: "a"}, {Role: wire.RoleUser, Content: "b"},
		{Role: wire.RoleAssistant, Reasoning: str("r"), ToolCalls: []wire.Call{{ID: "c", Name: "n", Arguments: "{}"}}},
	}}
	before, _ := json.Marshal(req)
	a := newAdapter(t, "http://127.0.0.1:1", Options{})
	if _, err := a.Prepare(req, thinking); err != nil {
		t.Fatalf("Prepare() error = %v", err)
	}
	if after, _ := json.Marshal(req); !bytes.Equal(before, after) {
		t.Errorf("Prepare() changed its request:\n%s\nwant\n%s", after, before)
	}
}

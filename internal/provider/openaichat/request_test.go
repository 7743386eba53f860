package openaichat

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/pkg/wire"
)

func TestPrepare(t *testing.T) {
	a := newAdapter(t, "http://127.0.0.1:1/v1", Options{})
	req := &provider.Request{
		System: "Be brief.",
		Messages: []provider.Message{
			{Role: wire.RoleUser, Content: "What time is it in Paris and Tokyo?"},
			{Role: wire.RoleAssistant, ToolCalls: []wire.Call{
				{ID: "call_1", Name: "get_time", Arguments: `{"tz":"Europe/Paris"}`},
				{ID: "call_2", Name: "get_time", Arguments: `{"tz":"Asia/Tokyo"}`},
			}},
			{Role: wire.RoleTool, ToolCallID: "call_1", Content: "10:00"},
			{Role: wire.RoleTool, ToolCallID: "call_2", Content: "18:00"},
			{Role: wire.RoleAssistant, Content: "Checking one more.", ToolCalls: []wire.Call{{ID: "call_3", Name: "now", Arguments: "{}"}}},
			{Role: wire.RoleTool, ToolCallID: "call_3", Content: ""},
			{Role: wire.RoleAssistant, Content: ""},
			{Role: wire.RoleUser, Content: "Thanks"},
		},
		Tools: []wire.Tool{
			{Name: "get_time", Description: "Current time in a zone.", Parameters: map[string]any{
				"type": "object", "properties": map[string]any{"tz": map[string]any{"type": "string"}}, "required": []any{"tz"},
			}},
			{Name: "now"},
		},
	}
	body, err := a.Prepare(req, provider.Model{Name: "gpt-4o-mini"})
	if err != nil {
		t.Fatalf("Prepare() error = %v", err)
	}
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("Prepare() body is not JSON: %v\n%s", err, body)
	}
	var want map[string]any
	wantJSON := `{
		"model": "gpt-4o-mini",
		"stream": true,
		"stream_options": {"include_usage": true},
		"messages": [
			{"role": "system", "content": "Be brief."},
			{"role": "user", "content": "What time is it in Paris and Tokyo?"},
			{"role": "assistant", "content": null, "tool_calls": [
				{"id": "call_1", "type": "function", "function": {"name": "get_time", "arguments": "{\"tz\":\"Europe/Paris\"}"}},
				{"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": "{\"tz\":\"Asia/Tokyo\"}"}}
			]},
			{"role": "tool", "content": "10:00", "tool_call_id": "call_1"},
			{"role": "tool", "content": "18:00", "tool_call_id": "call_2"},
			{"role": "assistant", "content": "Checking one more.", "tool_calls": [
				{"id": "call_3", "type": "function", "function": {"name": "now", "arguments": "{}"}}
			]},
			{"role": "tool", "content": "", "tool_call_id": "call_3"},
			{"role": "assistant", "content": ""},
			{"role": "user", "content": "Thanks"}
		],
		"tools": [
			{"type": "function", "function": {"name": "get_time", "description": "Current time in a zone.",
				"parameters": {"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]}}},
			{"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}}
		]
	}`
	if err := json.Unmarshal([]byte(wantJSON), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		w, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("Prepare() = %s\nwant %s", g, w)
	}
}

func TestPrepareShapes(t *testing.T) {
	a := newAdapter(t, "http://127.0.0.1:1/v1", Options{})
	tests := []struct {
		name  string
		req   provider.Request
		check func(t *testing.T, body map[string]any)
	}{
		{
			name: "no system prompt, no tools",
			req:  provider.Request{Messages: []provider.Message{{Role: wire.RoleUser, Content: "hi"}}},
			check: func(t *testing.T, body map[string]any) {
				t.Helper()
				msgs := body["messages"].([]any)
				if len(msgs) != 1 || msgs[0].(map[string]any)["role"] != "user" {
					t.Errorf("messages = %v; want only the user message", msgs)
				}
				if _, ok := body["tools"]; ok {
					t.Errorf("tools = %v; want the key absent", body["tools"])
				}
			},
		},
		{
			name: "no messages still sends an array",
			req:  provider.Request{},
			check: func(t *testing.T, body map[string]any) {
				t.Helper()
				if msgs, ok := body["messages"].([]any); !ok || len(msgs) != 0 {
					t.Errorf("messages = %#v; want []", body["messages"])
				}
			},
		},
		{
			name: "system is first even with a system-role message later",
			req:  provider.Request{System: "S", Messages: []provider.Message{{Role: wire.RoleUser, Content: "u"}, {Role: wire.RoleSystem, Content: "late"}}},
			check: func(t *testing.T, body map[string]any) {
				t.Helper()
				first := body["messages"].([]any)[0].(map[string]any)
				if first["role"] != "system" || first["content"] != "S" {
					t.Errorf("messages[0] = %v; want the system prompt", first)
				}
			},
		},
		{
			name: "user content with an empty string stays a string",
			req:  provider.Request{Messages: []provider.Message{{Role: wire.RoleUser, Content: ""}}},
			check: func(t *testing.T, body map[string]any) {
				t.Helper()
				m := body["messages"].([]any)[0].(map[string]any)
				if v, ok := m["content"]; !ok || v != "" {
					t.Errorf("content = %#v; want \"\"", v)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := a.Prepare(&tt.req, provider.Model{Name: "m"})
			if err != nil {
				t.Fatalf("Prepare() error = %v", err)
			}
			var body map[string]any
			if err := json.Unmarshal(b, &body); err != nil {
				t.Fatalf("Prepare() body is not JSON: %v", err)
			}
			tt.check(t, body)
		})
	}
}

func TestPrepareDeterministic(t *testing.T) {
	a := newAdapter(t, "http://127.0.0.1:1/v1", Options{})
	req := &provider.Request{System: "s", Messages: []provider.Message{{Role: wire.RoleUser, Content: "u"}},
		Tools: []wire.Tool{{Name: "t", Parameters: map[string]any{"type": "object", "properties": map[string]any{"b": map[string]any{}, "a": map[string]any{}}}}}}
	first, err := a.Prepare(req, provider.Model{Name: "m"})
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		again, _ := a.Prepare(req, provider.Model{Name: "m"})
		if string(again) != string(first) {
			t.Fatalf("Prepare() = %s; want the same bytes as %s", again, first)
		}
	}
}

func TestPrepareUnserializable(t *testing.T) {
	a := newAdapter(t, "http://127.0.0.1:1/v1", Options{})
	req := &provider.Request{Tools: []wire.Tool{{Name: "t", Parameters: map[string]any{"bad": func() {}}}}}
	_, err := a.Prepare(req, provider.Model{Name: "m"})
	if f := provider.AsFailure(err); f == nil || f.Class != provider.ClassInvalidRequest {
		t.Errorf("Prepare(unserializable schema) error = %v; want INVALID_REQUEST", err)
	}
}

func TestPrepareImages(t *testing.T) {
	a := newAdapter(t, "http://127.0.0.1:1/v1", Options{})
	req := &provider.Request{Messages: []provider.Message{{Role: wire.RoleUser, Content: "what is this?", Images: []string{"https://example.com/cat.png"}}}}
	body, err := a.Prepare(req, provider.Model{Name: "m"})
	if err != nil {
		t.Fatalf("Prepare(image) error = %v", err)
	}
	want := `"content":[{"type":"text","text":"what is this?"},{"type":"image_url","image_url":{"url":"https://example.com/cat.png"}}]`
	if !strings.Contains(string(body), want) {
		t.Errorf("Prepare(image) = %s; want content parts %s", body, want)
	}
	bad := &provider.Request{Messages: []provider.Message{{Role: wire.RoleAssistant, Content: "x", Images: []string{"u"}}}}
	if _, err := a.Prepare(bad, provider.Model{Name: "m"}); provider.AsFailure(err).Class != provider.ClassInvalidRequest {
		t.Errorf("Prepare(assistant image) error = %v; want INVALID_REQUEST", err)
	}
}

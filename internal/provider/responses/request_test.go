package responses

import (
	"bytes"
	"flag"
	"path/filepath"
	"testing"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/providertest"
	"github.com/turnstream/turnstream/pkg/wire"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func prepareRequest() *provider.Request {
	empty := ""
	return &provider.Request{
		System: "Be brief.",
		Messages: []provider.Message{
			{Role: wire.RoleUser, Content: "What time is it in Paris and Tokyo? And what is this?", Images: []string{"https://example.com/cat.png", "data:image/png;base64,iVBORw0KGgo="}},
			{Role: wire.RoleAssistant, Content: "Let me check.", Reasoning: &empty, ToolCalls: []wire.Call{
				{ID: "call_1", Name: "get_time", Arguments: `{"tz":"Europe/Paris"}`},
				{ID: "call_2", Name: "get_time", Arguments: `{"tz":"Asia/Tokyo"}`},
			}},
			{Role: wire.RoleTool, ToolCallID: "call_1", Content: "10:00"},
			{Role: wire.RoleTool, ToolCallID: "call_2", Content: "18:00"},
			{Role: wire.RoleAssistant, ToolCalls: []wire.Call{{ID: "call_3", Name: "now", Arguments: ""}}},
			{Role: wire.RoleTool, ToolCallID: "call_3", Content: ""},
			{Role: wire.RoleAssistant, Content: "It is 10:00 in Paris and 18:00 in Tokyo; the image is a cat."},
			{Role: wire.RoleAssistant},
			{Role: wire.RoleUser, Images: []string{"https://example.com/dog.png"}},
			{Role: wire.RoleUser, Content: "Thanks ☕ <b>&</b>"},
		},
		Tools: []wire.Tool{
			{Name: "get_time", Description: "Current time in a zone.", Parameters: map[string]any{
				"type": "object", "properties": map[string]any{"tz": map[string]any{"type": "string"}, "fmt": map[string]any{"type": "string", "default": "HH:mm"}}, "required": []any{"tz"},
			}},
			{Name: "now"},
		},
	}
}

// TestPrepareGolden: the request body, byte for byte (indented for reading).
func TestPrepareGolden(t *testing.T) {
	for _, tt := range []struct {
		golden string
		stream bool
	}{
		{"prepare_stream.golden.json", true},
		{"prepare_json.golden.json", false},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			a := newAdapter(t, "http://127.0.0.1:1/v1", Options{Stream: tt.stream})
			body, err := a.Prepare(prepareRequest(), provider.Model{Name: "gpt-5-mini"})
			if err != nil {
				t.Fatalf("Prepare() error = %v", err)
			}
			providertest.GoldenJSON(t, filepath.Join("testdata", tt.golden), body, *update)
		})
	}
}

// TestPrepareDeterministic: the same request is the same bytes, every time
// (retries resend them unchanged).
func TestPrepareDeterministic(t *testing.T) {
	a := newAdapter(t, "http://127.0.0.1:1/v1", Options{Stream: true})
	first, err := a.Prepare(prepareRequest(), provider.Model{Name: "m"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		again, err := a.Prepare(prepareRequest(), provider.Model{Name: "m"})
		if err != nil || !bytes.Equal(again, first) {
			t.Fatalf("Prepare() call %d = %s, %v; want the same bytes as the first", i+2, again, err)
		}
	}
}

func TestPrepareShapes(t *testing.T) {
	a := newAdapter(t, "http://127.0.0.1:1/v1", Options{})
	tests := []struct {
		name string
		req  provider.Request
		want string
	}{
		{
			name: "no system prompt, no tools, no messages",
			req:  provider.Request{},
			want: `{"model":"m","input":[],"stream":false,"store":false}`,
		},
		{
			name: "a system message among the others keeps its role",
			req:  provider.Request{Messages: []provider.Message{{Role: wire.RoleSystem, Content: "s"}, {Role: wire.RoleUser, Content: "u"}}},
			want: `{"model":"m","input":[{"role":"system","content":[{"type":"input_text","text":"s"}]},{"role":"user","content":[{"type":"input_text","text":"u"}]}],"stream":false,"store":false}`,
		},
		{
			name: "HTML characters are escaped the standard way",
			req:  provider.Request{System: "<sys>", Messages: []provider.Message{{Role: wire.RoleUser, Content: "a & b"}}},
			want: `{"model":"m","instructions":"\u003csys\u003e","input":[{"role":"user","content":[{"type":"input_text","text":"a \u0026 b"}]}],"stream":false,"store":false}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := a.Prepare(&tt.req, provider.Model{Name: "m"})
			if err != nil {
				t.Fatalf("Prepare() error = %v", err)
			}
			if string(body) != tt.want {
				t.Errorf("Prepare() = %s; want %s", body, tt.want)
			}
		})
	}
}

func TestPrepareUnserializable(t *testing.T) {
	a := newAdapter(t, "http://127.0.0.1:1/v1", Options{})
	req := &provider.Request{Tools: []wire.Tool{{Name: "f", Parameters: map[string]any{"bad": func() {}}}}}
	_, err := a.Prepare(req, provider.Model{Name: "m"})
	if f := provider.AsFailure(err); f == nil || f.Class != provider.ClassInvalidRequest {
		t.Errorf("Prepare() error = %v; want INVALID_REQUEST", err)
	}
}

package responses

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestStreamKeepsEncryptedReasoningAsEcho: the encrypted reasoning of an
// answer is its echo, ready to be sent back as it came; the summary is
// reasoning, never text.
func TestStreamKeepsEncryptedReasoningAsEcho(t *testing.T) {
	srv := httptest.NewServer(sseBytes(fixture(t, "reasoning_encrypted.sse")))
	defer srv.Close()
	a := newAdapter(t, srv.URL+"/v1", Options{Stream: true})
	resp, err := a.Stream(context.Background(), []byte(`{}`), func(provider.Frame) error { return nil })
	if err != nil {
		t.Fatalf("Stream() error = %v", err)
	}
	var items []reasoningInput
	if err := json.Unmarshal([]byte(resp.Echo), &items); err != nil {
		t.Fatalf("Echo = %q: %v", resp.Echo, err)
	}
	want := []reasoningInput{{Type: "reasoning", ID: "rs_68a3r", EncryptedContent: "gAAAAABoq-ENCRYPTED-1", Summary: []any{}}}
	if !reflect.DeepEqual(items, want) {
		t.Errorf("Echo items = %+v; want %+v", items, want)
	}
	if strings.Contains(resp.Text, "ENCRYPTED") || strings.Contains(resp.Text, "Planning") {
		t.Errorf("Text = %q; want no reasoning in it", resp.Text)
	}
}

// TestPrepareSendsTheEchoBack: a replayed assistant message's echo goes
// first, as its reasoning items; a stateless request of a native-history
// model asks for its own encrypted reasoning; a stored one does not, and
// an echo that is not this adapter's is left out.
func TestPrepareSendsTheEchoBack(t *testing.T) {
	echo := encodeEcho([]ReasoningItem{{ID: "rs_1", EncryptedContent: "gAAA-1"}})
	foreign := "thinking that is not a list of reasoning items"
	req := func(e *string) *provider.Request {
		return &provider.Request{Messages: []provider.Message{
			{Role: wire.RoleUser, Content: "time?"},
			{Role: wire.RoleAssistant, Reasoning: e, ToolCalls: []wire.Call{{ID: "call_1", Name: "get_time", Arguments: `{}`}}},
			{Role: wire.RoleTool, ToolCallID: "call_1", Content: "10:00"},
		}}
	}
	native := provider.Model{Name: "gpt-5-mini", Capabilities: provider.Capabilities{Text: true, Tools: true, NativeToolHistory: true}}
	tests := []struct {
		name    string
		store   bool
		echo    *string
		include bool
		types   []string
	}{
		{"stateless with echo", false, &echo, true, []string{"message", "reasoning", "function_call", "function_call_output"}},
		{"stored", true, &echo, false, []string{"message", "reasoning", "function_call", "function_call_output"}},
		{"foreign echo", false, &foreign, true, []string{"message", "function_call", "function_call_output"}},
		{"no echo", false, nil, true, []string{"message", "function_call", "function_call_output"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAdapter(t, "http://127.0.0.1:1/v1", Options{Stream: true, Store: tt.store})
			b, err := a.Prepare(req(tt.echo), native)
			if err != nil {
				t.Fatal(err)
			}
			var body struct {
				Include []string                     `json:"include"`
				Input   []map[string]json.RawMessage `json:"input"`
			}
			if err := json.Unmarshal(b, &body); err != nil {
				t.Fatal(err)
			}
			var types []string
			for _, it := range body.Input {
				var typ string
				_ = json.Unmarshal(it["type"], &typ)
				if typ == "" {
					typ = "message"
				}
				types = append(types, typ)
				if typ == "reasoning" && string(it["encrypted_content"]) != `"gAAA-1"` {
					t.Errorf("reasoning item = %v; want the echo's encrypted content", it)
				}
			}
			if !reflect.DeepEqual(types, tt.types) {
				t.Errorf("input types = %v; want %v", types, tt.types)
			}
			if got := len(body.Include) == 1 && body.Include[0] == includeEncrypted; got != tt.include {
				t.Errorf("include = %v; want the encrypted reasoning asked for: %v", body.Include, tt.include)
			}
		})
	}
}

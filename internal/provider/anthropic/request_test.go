package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/providertest"
	"github.com/turnstream/turnstream/pkg/wire"
)

var update = flag.Bool("update", false, "rewrite the golden request bodies in testdata/requests")

var sonnet = provider.Model{Name: "claude-sonnet-4-5", ContextTokens: 200000, Capabilities: API.Capabilities}

func str(s string) *string { return &s }

var weatherTool = wire.Tool{Name: "get_weather", Description: "Current weather in a city.", Parameters: map[string]any{
	"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"},
}}

// signedEcho is the echo of an answer with a redacted and a signed
// thinking block, as the translator returns it.
const signedEcho = `[{"data":"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP","type":"redacted_thinking"},` +
	`{"signature":"ErUBCkYIBBgCIkDGmgPUZ","thinking":"Two cities: call get_weather twice.","type":"thinking"}]`

// toolStep is a step with two calls and their results, the assistant's
// echo being reasoning.
func toolStep(reasoning *string) []provider.Message {
	return []provider.Message{
		{Role: wire.RoleUser, Content: "Weather in Paris and Tokyo?"},
		{Role: wire.RoleAssistant, Content: "Checking both.", Reasoning: reasoning, ToolCalls: []wire.Call{
			{ID: "toolu_01A09q90qw90lq917835lq9", Name: "get_weather", Arguments: `{"city": "Paris"}`},
			{ID: "toolu_01B19r91rx91mr928946mr0", Name: "get_weather", Arguments: `{"city":"Tokyo"}`},
		}},
		{Role: wire.RoleTool, ToolCallID: "toolu_01A09q90qw90lq917835lq9", Content: "18°C, cloudy"},
		{Role: wire.RoleTool, ToolCallID: "toolu_01B19r91rx91mr928946mr0", Content: "error: upstream timeout", IsError: true},
	}
}

// TestPrepareGolden compares request bodies with testdata/requests/*.json
// (the body indented; key order and presence are compared as sent).
func TestPrepareGolden(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		req  *provider.Request
	}{
		{
			name: "plain_text",
			req:  &provider.Request{System: "You are terse.", Messages: []provider.Message{{Role: wire.RoleUser, Content: "Hi"}}},
		},
		{
			name: "system_messages_joined",
			req: &provider.Request{System: "You are terse.", Messages: []provider.Message{
				{Role: wire.RoleSystem, Content: "Answer in French."},
				{Role: wire.RoleUser, Content: "Hi"},
				{Role: wire.RoleUser, Content: ""},
				{Role: wire.RoleUser, Content: "Still there?"},
				{Role: wire.RoleAssistant, Content: "Oui."},
				{Role: wire.RoleAssistant, Content: ""},
				{Role: wire.RoleSystem, Content: "Never use emoji."},
				{Role: wire.RoleUser, Content: "How are you?"},
			}},
		},
		{
			// Every result of the step in one user message, before the
			// text that follows them; an error result flagged.
			name: "tools_native_history_grouped_results",
			req: &provider.Request{System: "Use tools.", Messages: append(toolStep(nil),
				provider.Message{Role: wire.RoleUser, Content: "And in Oslo?"},
			), Tools: []wire.Tool{weatherTool, {Name: "now"}}},
		},
		{
			name: "echo_signed_thinking",
			o:    Options{MaxTokens: 16000, ThinkingBudget: 8000},
			req:  &provider.Request{Messages: toolStep(str(signedEcho)), Tools: []wire.Tool{weatherTool}},
		},
		{
			// A session that went through DeepSeek and a Kimi-style server
			// first: their ids are remapped on both sides, their plain
			// reasoning is foreign and dropped.
			name: "session_switch_foreign_ids_and_reasoning",
			req: &provider.Request{Messages: []provider.Message{
				{Role: wire.RoleUser, Content: "Time in Paris, then Tokyo?"},
				{Role: wire.RoleAssistant, Reasoning: str("Paris first."), ToolCalls: []wire.Call{
					{ID: "call_00_Aa1Bb2Cc3Dd4Ee5Ff6Gg7Hh8", Name: "get_time", Arguments: `{"tz":"Europe/Paris"}`},
				}},
				{Role: wire.RoleTool, ToolCallID: "call_00_Aa1Bb2Cc3Dd4Ee5Ff6Gg7Hh8", Content: "10:00"},
				{Role: wire.RoleAssistant, Reasoning: str(`[{"type":"reasoning.text","text":"Tokyo next."}]`), ToolCalls: []wire.Call{
					{ID: "functions.get_time:1", Name: "get_time", Arguments: `{"tz":"Asia/Tokyo"}`},
				}},
				{Role: wire.RoleUser, ToolCallID: "functions.get_time:1", Content: "18:00"},
				{Role: wire.RoleUser, Content: "Which is later?"},
			}, Tools: []wire.Tool{{Name: "get_time", Parameters: map[string]any{"type": "object", "properties": map[string]any{"tz": map[string]any{"type": "string"}}}}}},
		},
		{
			name: "images",
			req: &provider.Request{Messages: []provider.Message{{Role: wire.RoleUser, Content: "Compare these.", Images: []string{
				"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==",
				"https://upload.wikimedia.org/wikipedia/commons/a/a7/Camponotus_flavomarginatus_ant.jpg",
			}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAdapter(t, "http://127.0.0.1:1", tt.o)
			body, err := a.Prepare(tt.req, sonnet)
			if err != nil {
				t.Fatalf("Prepare() error = %v", err)
			}
			providertest.GoldenJSON(t, filepath.Join("testdata", "requests", tt.name+".json"), body, *update)
			for range 5 {
				if again, err := a.Prepare(tt.req, sonnet); err != nil || !bytes.Equal(again, body) {
					t.Fatalf("Prepare(%s) again = %s, %v; want the same bytes", tt.name, again, err)
				}
			}
		})
	}
}

// TestPrepareRejects: what Messages cannot take fails before any body is
// produced, with a content-free reason.
func TestPrepareRejects(t *testing.T) {
	user := func(images ...string) provider.Message {
		return provider.Message{Role: wire.RoleUser, Content: "What is this?", Images: images}
	}
	tests := []struct {
		name string
		msgs []provider.Message
		want error
	}{
		{"image on an assistant message", []provider.Message{user(), {Role: wire.RoleAssistant, Content: "a", Images: []string{"https://example.com/a.png"}}}, ErrImageRole},
		{"image on a tool result", append(toolStep(nil)[:2], provider.Message{Role: wire.RoleTool, ToolCallID: "toolu_01A09q90qw90lq917835lq9", Images: []string{"https://example.com/a.png"}}), ErrImageRole},
		{"image of an unsupported type", []provider.Message{user("data:image/bmp;base64,Qk0=")}, ErrImageSource},
		{"data URI not base64", []provider.Message{user("data:image/png,rawbytes")}, ErrImageSource},
		{"data URI without data", []provider.Message{user("data:image/png;base64,")}, ErrImageSource},
		{"image from a file path", []provider.Message{user("/tmp/a.png")}, ErrImageSource},
		{"arguments not an object", []provider.Message{user(), {Role: wire.RoleAssistant, ToolCalls: []wire.Call{{ID: "toolu_1", Name: "n", Arguments: `[1]`}}}}, ErrArguments},
		{"unknown role", []provider.Message{{Role: "narrator", Content: "x"}}, ErrRole},
		{"empty role", []provider.Message{{Content: "x"}}, ErrRole},
	}
	a := newAdapter(t, "http://127.0.0.1:1", Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := a.Prepare(&provider.Request{System: "s", Messages: tt.msgs}, sonnet)
			if body != nil {
				t.Errorf("Prepare() body = %q; want none", body)
			}
			var f *provider.Failure
			if !errors.As(err, &f) || f.Class != provider.ClassInvalidRequest || !errors.Is(err, tt.want) {
				t.Errorf("Prepare() error = %v; want INVALID_REQUEST wrapping %v", err, tt.want)
			}
			if f != nil && (strings.Contains(f.Error(), "What is this") || f.Reason == "") {
				t.Errorf("Failure = %q (reason %q); want a content-free reason", f.Error(), f.Reason)
			}
		})
	}
}

// TestPrepareDoesNotMutate: remapping and grouping never write through to
// the request.
func TestPrepareDoesNotMutate(t *testing.T) {
	req := &provider.Request{System: "s", Messages: []provider.Message{
		{Role: wire.RoleUser, Content: "a"}, {Role: wire.RoleUser, Content: "b"},
		{Role: wire.RoleAssistant, Reasoning: str(signedEcho), ToolCalls: []wire.Call{{ID: "functions.n:0", Name: "n", Arguments: "{}"}}},
		{Role: wire.RoleTool, ToolCallID: "functions.n:0", Content: "ok"},
	}}
	before, _ := json.Marshal(req)
	a := newAdapter(t, "http://127.0.0.1:1", Options{})
	if _, err := a.Prepare(req, sonnet); err != nil {
		t.Fatalf("Prepare() error = %v", err)
	}
	if after, _ := json.Marshal(req); !bytes.Equal(before, after) {
		t.Errorf("Prepare() changed its request:\n%s\nwant\n%s", after, before)
	}
}

// TestEchoRoundTrip: the echo a stream returns, given back as the
// assistant message's Reasoning, is sent as the very blocks the answer
// had, first in the assistant message.
func TestEchoRoundTrip(t *testing.T) {
	srv, _ := providertest.Serve(t, sse(fixture(t, "redacted_thinking_tool_use.sse")))
	a := newAdapter(t, srv.URL, Options{MaxTokens: 16000, ThinkingBudget: 8000})
	o := providertest.Stream(t, a, []byte(`{}`))
	if o.Err != nil || o.Resp.Echo == "" {
		t.Fatalf("Stream() = %+v, %v; want a response with an echo", o.Resp, o.Err)
	}
	call := o.Resp.ToolCalls[0]
	body, err := a.Prepare(&provider.Request{Messages: []provider.Message{
		{Role: wire.RoleUser, Content: "Read it."},
		{Role: wire.RoleAssistant, Reasoning: &o.Resp.Echo, ToolCalls: []wire.Call{{ID: call.ProviderID, Name: call.Name, Arguments: call.Arguments}}},
		{Role: wire.RoleTool, ToolCallID: call.ProviderID, Content: "package main"},
	}}, sonnet)
	if err != nil {
		t.Fatalf("Prepare() error = %v", err)
	}
	var sent struct {
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &sent); err != nil || len(sent.Messages) != 3 {
		t.Fatalf("Prepare() body = %s (%v); want three messages", body, err)
	}
	asst := sent.Messages[1].Content
	var blocks []json.RawMessage
	if err := json.Unmarshal([]byte(o.Resp.Echo), &blocks); err != nil {
		t.Fatal(err)
	}
	if len(asst) != len(blocks)+1 {
		t.Fatalf("assistant content = %s; want the %d echo blocks, then the tool_use", asst, len(blocks))
	}
	for i, b := range blocks {
		if !bytes.Equal(asst[i], b) {
			t.Errorf("assistant block %d = %s; want the echo's %s", i, asst[i], b)
		}
	}
	if !bytes.Contains(asst[len(blocks)], []byte(`"type":"tool_use"`)) {
		t.Errorf("assistant block %d = %s; want the tool_use last", len(blocks), asst[len(blocks)])
	}
}

func TestDecodeEchoRejectsForeign(t *testing.T) {
	for _, s := range []string{
		"", "plain reasoning", `{}`, `[]`, `[{"type":"thinking","thinking":"t"}]`, `[{"type":"thinking","signature":"s"}]`,
		`[{"type":"redacted_thinking"}]`, `[{"type":"reasoning.text","text":"t"}]`, `[{"type":"text","text":"t"}]`,
		`[{"type":"redacted_thinking","data":"d","signature":"s"}]`, `[{"data":"d","type":"redacted_thinking"},1]`,
	} {
		if blocks, ok := decodeEcho(s); ok || blocks != nil {
			t.Errorf("decodeEcho(%q) = %d blocks, %v; want foreign", s, len(blocks), ok)
		}
	}
	if blocks, ok := decodeEcho(signedEcho); !ok || len(blocks) != 2 {
		t.Errorf("decodeEcho(signedEcho) = %d blocks, %v; want 2", len(blocks), ok)
	}
}

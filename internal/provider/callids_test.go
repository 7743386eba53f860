package provider_test

import (
	"regexp"
	"testing"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/pkg/wire"
)

func TestRemapCallIDs(t *testing.T) {
	req := &provider.Request{Messages: []provider.Message{
		{Role: wire.RoleUser, Content: "go"},
		{Role: wire.RoleAssistant, ToolCalls: []wire.Call{{ID: "call_abc123DEF456ghi789JKL012", Name: "a"}, {ID: "abcDEF123", Name: "b"}, {ID: "functions.x:0", Name: "c"}}},
		{Role: wire.RoleTool, ToolCallID: "call_abc123DEF456ghi789JKL012"},
		{Role: wire.RoleTool, ToolCallID: "abcDEF123"},
		{Role: wire.RoleTool, ToolCallID: "functions.x:0"},
	}}
	if got := provider.RemapCallIDs(req, provider.CallIDDefault); got != req {
		t.Errorf("RemapCallIDs(default) changed the request")
	}
	got := provider.RemapCallIDs(req, provider.CallIDAlnum9)
	alnum9 := regexp.MustCompile(`^[A-Za-z0-9]{9}$`)
	seen := map[string]bool{}
	for i, c := range got.Messages[1].ToolCalls {
		if !alnum9.MatchString(c.ID) {
			t.Errorf("call %d id = %q; want 9 alphanumerics", i, c.ID)
		}
		if seen[c.ID] {
			t.Errorf("call %d id %q is not unique", i, c.ID)
		}
		seen[c.ID] = true
		if got.Messages[2+i].ToolCallID != c.ID {
			t.Errorf("result %d answers %q; want %q (remapped on both sides)", i, got.Messages[2+i].ToolCallID, c.ID)
		}
	}
	if got.Messages[1].ToolCalls[1].ID != "abcDEF123" {
		t.Errorf("an id already in format was remapped to %q", got.Messages[1].ToolCalls[1].ID)
	}
	if req.Messages[1].ToolCalls[0].ID != "call_abc123DEF456ghi789JKL012" || req.Messages[2].ToolCallID != "call_abc123DEF456ghi789JKL012" {
		t.Errorf("RemapCallIDs changed its input")
	}
	if again := provider.RemapCallIDs(req, provider.CallIDAlnum9); again.Messages[1].ToolCalls[0].ID != got.Messages[1].ToolCalls[0].ID {
		t.Errorf("RemapCallIDs is not deterministic")
	}
}

func TestRemapCallIDsAnthropic(t *testing.T) {
	req := &provider.Request{Messages: []provider.Message{
		{Role: wire.RoleUser, Content: "go"},
		{Role: wire.RoleAssistant, ToolCalls: []wire.Call{{ID: "call_00_abcDEF", Name: "a"}, {ID: "functions.x:0", Name: "b"}, {ID: "", Name: "c"}}},
		{Role: wire.RoleTool, ToolCallID: "call_00_abcDEF"},
		{Role: wire.RoleTool, ToolCallID: "functions.x:0"},
	}}
	got := provider.RemapCallIDs(req, provider.CallIDAnthropic)
	pattern := regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)
	seen := map[string]bool{}
	for i, c := range got.Messages[1].ToolCalls {
		if !pattern.MatchString(c.ID) {
			t.Errorf("call %d id = %q; want Anthropic's pattern", i, c.ID)
		}
		if seen[c.ID] {
			t.Errorf("call %d id %q is not unique", i, c.ID)
		}
		seen[c.ID] = true
		if r := 2 + i; r < len(got.Messages) && got.Messages[r].ToolCallID != c.ID {
			t.Errorf("result %d answers %q; want %q (remapped on both sides)", i, got.Messages[r].ToolCallID, c.ID)
		}
	}
	if id := got.Messages[1].ToolCalls[0].ID; id != "call_00_abcDEF" {
		t.Errorf("an id already in Anthropic's pattern was remapped to %q", id)
	}
	if id := got.Messages[1].ToolCalls[1].ID; len(id) != len("toolu_")+24 || id[:6] != "toolu_" {
		t.Errorf("remapped id = %q; want toolu_ and 24 characters", id)
	}
	if again := provider.RemapCallIDs(req, provider.CallIDAnthropic); again.Messages[1].ToolCalls[1].ID != got.Messages[1].ToolCalls[1].ID {
		t.Errorf("RemapCallIDs is not deterministic")
	}
}

package config

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/provider/apis"
	"github.com/turnstream/turnstream/schemas"
)

// The config schema names every configurable API and holds each one's
// fragment: the APIs' descriptors are the one source, and the schema must
// follow them.
func TestSchemaFollowsTheAPIDescriptors(t *testing.T) {
	b, err := schemas.FS.ReadFile(schemas.Config)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Defs struct {
			Provider struct {
				Properties struct {
					API struct {
						Description string   `json:"description"`
						Enum        []string `json:"enum"`
					} `json:"api"`
				} `json:"properties"`
				AllOf []struct {
					If   map[string]any `json:"if"`
					Then map[string]any `json:"then"`
				} `json:"allOf"`
			} `json:"provider"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	p := doc.Defs.Provider
	if want := apis.Configurable(); !slices.Equal(p.Properties.API.Enum, want) {
		t.Errorf("schema api enum = %q; want %q (go generate ./schemas)", p.Properties.API.Enum, want)
	}
	got := map[string]map[string]any{}
	for _, c := range p.AllOf {
		api, _ := c.If["properties"].(map[string]any)["api"].(map[string]any)["const"].(string)
		got[api] = c.Then
	}
	for _, a := range apis.All() {
		if !a.Configurable() {
			continue
		}
		if !strings.Contains(p.Properties.API.Description, a.Name+": "+a.Doc) {
			t.Errorf("schema api description lacks %q", a.Name+": "+a.Doc)
		}
		want := a.SchemaFragment()
		if want == nil {
			if _, ok := got[a.Name]; ok {
				t.Errorf("schema has a fragment for %s; its descriptor has none", a.Name)
			}
			continue
		}
		// Compare as JSON values.
		wb, _ := json.Marshal(want)
		var wv map[string]any
		_ = json.Unmarshal(wb, &wv)
		if !reflect.DeepEqual(got[a.Name], wv) {
			t.Errorf("schema fragment of %s = %s; want allOf entry {\"if\": {\"properties\": {\"api\": {\"const\": %q}}}, \"then\": %s}", a.Name, mustJSON(got[a.Name]), a.Name, wb)
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// An API's own settings are accepted for it and refused for the others,
// by the schema (Parse) and by Validate alike.
func TestAPISettings(t *testing.T) {
	doc := func(api, extra string) string {
		return "providers: [{name: p, api: " + api + ", base_url: \"http://127.0.0.1:1\"" + extra + "}]\n" +
			"models: [{provider: p, name: m}]\nroutes: [{name: default, targets: [{provider: p, model: m}]}]\n"
	}
	ok, err := Parse([]byte(doc("anthropic_messages", ", max_tokens: 8192, thinking_budget: 2048")))
	if err != nil {
		t.Fatalf("Parse(anthropic with its settings) = %v", err)
	}
	if p := ok.Providers[0]; p.MaxTokens != 8192 || p.ThinkingBudget != 2048 {
		t.Errorf("provider = %+v; want the settings as written", p)
	}
	for _, extra := range []string{", max_tokens: 8192", ", thinking_budget: 2048", ", store: true"} {
		if _, err := Parse([]byte(doc("openai_chat_completions", extra))); err == nil {
			t.Errorf("Parse(chat%s) = nil; want an error", extra)
		}
	}
	c := &Config{
		Providers: []Provider{{Name: "p", API: "openai_chat_completions", BaseURL: "http://127.0.0.1:1", MaxTokens: 10, ThinkingBudget: 10}},
		Models:    []Model{{Provider: "p", Name: "m"}},
		Routes:    []Route{{Name: "default", Targets: []Target{{Provider: "p", Model: "m"}}}},
	}
	err = c.Validate()
	if err == nil || !strings.Contains(err.Error(), "max_tokens is not a setting of openai_chat_completions") || !strings.Contains(err.Error(), "thinking_budget") {
		t.Errorf("Validate(chat with Anthropic settings) = %v; want both named", err)
	}
}

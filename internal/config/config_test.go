package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func ptr[T any](v T) *T { return &v }

func TestLoadFull(t *testing.T) {
	got, err := Load(filepath.Join("testdata", "full.yaml"))
	if err != nil {
		t.Fatalf("Load(testdata/full.yaml) = %v; want nil", err)
	}
	want := &Config{
		Providers: []Provider{
			{Name: "openai", API: "openai_chat_completions", BaseURL: "https://api.openai.com/v1", APIKeyEnv: "OPENAI_API_KEY", IdleTimeout: Duration(90 * time.Second)},
			{Name: "backup", API: "deepseek_chat_completions", BaseURL: "http://127.0.0.1:8081/v1", APIKeyFile: "/run/secrets/deepseek",
				Headers: map[string]string{"X-Request-Source": "turnstream"}, IdleTimeout: Duration(60 * time.Second)},
			{Name: "responses", API: "openai_responses", BaseURL: "https://api.openai.com/v1", Deprecated: true, IdleTimeout: Duration(60 * time.Second)},
		},
		Models: []Model{
			{Provider: "openai", Name: "gpt-4o-mini", SupportsTools: ptr(true), ContextTokens: 128000},
			{Provider: "backup", Name: "m2", SupportsTools: ptr(false), ContextTokens: 64000},
			{Provider: "responses", Name: "o4-mini", ContextTokens: DefaultContextTokens},
		},
		Routes: []Route{
			{Name: "default", Targets: []Target{{Provider: "openai", Model: "gpt-4o-mini"}, {Provider: "backup", Model: "m2"}}},
			{Name: "cheap_2", Targets: []Target{{Provider: "backup", Model: "m2"}}},
		},
		Budgets: Budgets{
			BudgetValues: BudgetValues{MaxIterations: 10, MaxToolCalls: 20, MaxRepeatedToolFailures: 3, WallClock: Duration(90 * time.Second)},
			Ceiling:      BudgetValues{MaxIterations: 32, MaxToolCalls: 64, MaxRepeatedToolFailures: 5, WallClock: Duration(10 * time.Minute)},
		},
		Worker: Worker{Concurrency: 16, AckWait: Duration(45 * time.Second), MaxDeliver: 5,
			ToolTimeout: Duration(2 * time.Minute), ToolAckWait: Duration(3 * time.Second), DrainTimeout: Duration(1500 * time.Millisecond)},
		NATS: NATS{URL: "nats://127.0.0.1:4222", Prefix: "acme.turn", Replicas: 3},
		Limits: Limits{
			Response: ResponseLimits{MaxLineBytes: 128 << 10, MaxEventBytes: 192 << 10, MaxStreamBytes: 32 << 20,
				MaxTextBytes: 256 << 10, MaxReasoningBytes: 1 << 20, MaxToolCalls: 32, MaxArgumentBytes: 64 << 10,
				MaxMessageBytes: 512 << 10, MaxChunks: 64 << 10},
			ToolResult: ToolResultLimits{MaxBytes: 128 << 10, Redact: ptr(false)},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Load(testdata/full.yaml) =\n%+v\nwant\n%+v", got, want)
	}
	if m, ok := got.Model(Target{Provider: "backup", Model: "m2"}); !ok || m.Tools() {
		t.Errorf("Model(backup/m2) = %+v, %v; want a model without tools", m, ok)
	}
	if r, ok := got.Route(""); !ok || r.Targets[0].String() != "openai/gpt-4o-mini" {
		t.Errorf(`Route("") = %+v, %v; want the default route, primary openai/gpt-4o-mini`, r, ok)
	}
}

// TestParseDesignExample parses the example of DESIGN.md, completed with the
// backup provider and model its route names.
func TestParseDesignExample(t *testing.T) {
	const doc = `
providers:
  - name: openai
    api: openai_chat_completions   # deepseek_chat_completions | openai_responses
    base_url: https://api.openai.com/v1
    api_key_env: OPENAI_API_KEY
  - {name: backup, api: deepseek_chat_completions, base_url: https://api.deepseek.com}
models:
  - {provider: openai, name: gpt-4o-mini, supports_tools: true, context_tokens: 128000}
  - {provider: backup, name: m2}
routes:
  - name: default
    targets: [{provider: openai, model: gpt-4o-mini}, {provider: backup, model: m2}]
`
	c, err := Parse([]byte(doc))
	if err != nil {
		t.Fatalf("Parse(design example) = %v; want nil", err)
	}
	r, ok := c.Route(DefaultRoute)
	if !ok || len(r.Targets) != 2 || r.Targets[1] != (Target{Provider: "backup", Model: "m2"}) {
		t.Errorf("Route(default) = %+v, %v; want openai/gpt-4o-mini then backup/m2", r, ok)
	}
}

func TestParseDefaults(t *testing.T) {
	const doc = `
providers: [{name: p, api: openai_chat_completions, base_url: "http://localhost:1/v1"}]
models: [{provider: p, name: m}]
routes: [{name: default, targets: [{provider: p, model: m}]}]
`
	c, err := Parse([]byte(doc))
	if err != nil {
		t.Fatalf("Parse(minimal) = %v; want nil", err)
	}
	defaults := BudgetValues{MaxIterations: 8, MaxToolCalls: 16, MaxRepeatedToolFailures: 2, WallClock: Duration(2 * time.Minute)}
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"Budgets", c.Budgets, Budgets{BudgetValues: defaults, Ceiling: defaults}},
		{"Worker", c.Worker, Worker{Concurrency: 64, AckWait: Duration(30 * time.Second), MaxDeliver: 10,
			ToolTimeout: Duration(60 * time.Second), ToolAckWait: Duration(5 * time.Second), DrainTimeout: Duration(30 * time.Second)}},
		{"NATS", c.NATS, NATS{Prefix: "turn"}},
		{"Providers[0].IdleTimeout", c.Providers[0].IdleTimeout, Duration(60 * time.Second)},
		{"Providers[0].Headers", c.Providers[0].Headers, map[string]string(nil)},
		{"Models[0].ContextTokens", c.Models[0].ContextTokens, DefaultContextTokens},
		{"Models[0].Tools()", c.Models[0].Tools(), true},
		{"Limits", c.Limits, Limits{Response: DefaultResponseLimits, ToolResult: ToolResultLimits{MaxBytes: DefaultToolResultMaxBytes, Redact: ptr(true)}}},
		{"Limits.ToolResult.Redacts()", c.Limits.ToolResult.Redacts(), true},
	}
	for _, tt := range tests {
		if !reflect.DeepEqual(tt.got, tt.want) {
			t.Errorf("Parse(minimal).%s = %+v; want %+v", tt.name, tt.got, tt.want)
		}
	}
}

func TestApplyDefaultsCeiling(t *testing.T) {
	tests := []struct {
		name string
		in   Budgets
		want Budgets
	}{
		{
			name: "ceiling below defaults is raised",
			in: Budgets{
				BudgetValues: BudgetValues{MaxIterations: 10, WallClock: Duration(time.Minute)},
				Ceiling:      BudgetValues{MaxIterations: 4, MaxToolCalls: 100, WallClock: Duration(time.Second)},
			},
			want: Budgets{
				BudgetValues: BudgetValues{MaxIterations: 10, MaxToolCalls: 16, MaxRepeatedToolFailures: 2, WallClock: Duration(time.Minute)},
				Ceiling:      BudgetValues{MaxIterations: 10, MaxToolCalls: 100, MaxRepeatedToolFailures: 2, WallClock: Duration(time.Minute)},
			},
		},
		{
			name: "explicit values kept",
			in: Budgets{
				BudgetValues: BudgetValues{MaxIterations: 1, MaxToolCalls: 2, MaxRepeatedToolFailures: 3, WallClock: Duration(4 * time.Second)},
				Ceiling:      BudgetValues{MaxIterations: 5, MaxToolCalls: 6, MaxRepeatedToolFailures: 7, WallClock: Duration(8 * time.Second)},
			},
			want: Budgets{
				BudgetValues: BudgetValues{MaxIterations: 1, MaxToolCalls: 2, MaxRepeatedToolFailures: 3, WallClock: Duration(4 * time.Second)},
				Ceiling:      BudgetValues{MaxIterations: 5, MaxToolCalls: 6, MaxRepeatedToolFailures: 7, WallClock: Duration(8 * time.Second)},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Config{Budgets: tt.in}
			c.ApplyDefaults()
			if c.Budgets != tt.want {
				t.Errorf("ApplyDefaults(%+v).Budgets = %+v; want %+v", tt.in, c.Budgets, tt.want)
			}
		})
	}
}

const validDoc = `
providers:
  - name: openai
    api: openai_chat_completions
    base_url: https://api.openai.com/v1
    api_key_env: OPENAI_API_KEY
models:
  - {provider: openai, name: gpt-4o-mini}
routes:
  - name: default
    targets: [{provider: openai, model: gpt-4o-mini}]
`

// TestParseSchemaErrors checks that the schema catches typos and bad values,
// naming the file and the offending location.
func TestParseSchemaErrors(t *testing.T) {
	tests := []struct {
		name string
		old  string // replaced in validDoc
		new  string
		want []string // substrings of the error
	}{
		{"unknown top-level key", "routes:", "route_table: []\nroutes:", []string{"route_table"}},
		{"misspelled provider key", "base_url:", "base_ur: x\n    base_url:", []string{"providers[0]", "base_ur"}},
		{"misspelled model key", "name: gpt-4o-mini}", "name: gpt-4o-mini, supports_tool: true}", []string{"models[0]", "supports_tool"}},
		{"bad api", "api: openai_chat_completions", "api: gemini_generate_content", []string{"providers[0].api", "openai_chat_completions"}},
		{"bad duration", "api_key_env:", "idle_timeout: 90 seconds\n    api_key_env:", []string{"providers[0].idle_timeout", "90 seconds"}},
		{"negative duration", "routes:", "worker: {ack_wait: -1s}\nroutes:", []string{"worker.ack_wait"}},
		{"duration as a number", "routes:", "worker: {ack_wait: 30}\nroutes:", []string{"worker.ack_wait"}},
		{"duration without unit", "routes:", "budgets: {wall_clock: \"120\"}\nroutes:", []string{"budgets.wall_clock"}},
		{"unknown budget", "routes:", "budgets: {max_tokens: 5}\nroutes:", []string{"budgets", "max_tokens"}},
		{"unknown ceiling key", "routes:", "budgets: {ceiling: {max_iteration: 5}}\nroutes:", []string{"budgets.ceiling", "max_iteration"}},
		{"negative budget", "routes:", "budgets: {max_tool_calls: -1}\nroutes:", []string{"budgets.max_tool_calls"}},
		{"unknown worker key", "routes:", "worker: {threads: 4}\nroutes:", []string{"worker", "threads"}},
		{"tool ack wait as a number", "routes:", "worker: {tool_ack_wait: 5}\nroutes:", []string{"worker.tool_ack_wait"}},
		{"too many replicas", "routes:", "nats: {replicas: 7}\nroutes:", []string{"nats.replicas"}},
		{"bad prefix", "routes:", "nats: {prefix: \"turn.>\"}\nroutes:", []string{"nats.prefix"}},
		{"missing base_url", "    base_url: https://api.openai.com/v1\n", "", []string{"providers[0]", "base_url"}},
		{"base_url not http", "base_url: https://api.openai.com/v1", "base_url: ftp://example.com", []string{"providers[0].base_url"}},
		{"both key sources", "api_key_env: OPENAI_API_KEY", "api_key_env: OPENAI_API_KEY\n    api_key_file: /k", []string{"providers[0]"}},
		{"bad key variable", "api_key_env: OPENAI_API_KEY", "api_key_env: OPENAI-KEY", []string{"providers[0].api_key_env"}},
		{"bad retry mode", "api_key_env:", "retry: {mode: sometimes}\n    api_key_env:", []string{"providers[0].retry.mode"}},
		{"retry jitter out of range", "api_key_env:", "retry: {jitter: 2}\n    api_key_env:", []string{"providers[0].retry.jitter"}},
		{"unknown retry key", "api_key_env:", "retry: {retries: 3}\n    api_key_env:", []string{"providers[0].retry", "retries"}},
		{"unknown capability", "api_key_env:", "capabilities: {vision: true}\n    api_key_env:", []string{"providers[0].capabilities", "vision"}},
		{"capability not a boolean", "name: gpt-4o-mini}", "name: gpt-4o-mini, capabilities: {tools: yes please}}", []string{"models[0].capabilities.tools"}},
		// jsonschema v6.0.3 reports propertyNames failures at a wrong
		// location: Parse places them itself.
		{"authorization header", "api_key_env: OPENAI_API_KEY", "headers: {Authorization: Bearer sk-x}", []string{`providers[0].headers.Authorization: key "Authorization": is not allowed: `}},
		{"api key header", "api_key_env: OPENAI_API_KEY", "headers: {x-api-key: sk-x}", []string{`providers[0].headers.x-api-key: key "x-api-key": is not allowed`}},
		{"header name with space", "api_key_env: OPENAI_API_KEY", "headers: {\"X Source\": a}", []string{`providers[0].headers.X Source: key "X Source"`, "pattern"}},
		{"header value not a string", "api_key_env: OPENAI_API_KEY", "headers: {X-Retries: [1]}", []string{"providers[0].headers.X-Retries"}},
		{"missing model name", "{provider: openai, name: gpt-4o-mini}", "{provider: openai}", []string{"models[0]", "name"}},
		{"empty targets", "targets: [{provider: openai, model: gpt-4o-mini}]", "targets: []", []string{"routes[0].targets"}},
		{"missing targets", "    targets: [{provider: openai, model: gpt-4o-mini}]\n", "", []string{"routes[0]", "targets"}},
		{"target without model", "targets: [{provider: openai, model: gpt-4o-mini}]", "targets: [{provider: openai}]", []string{"routes[0].targets[0]", "model"}},
		{"route name not a token", "name: default", "name: default.fast", []string{"routes[0].name"}},
		{"no providers", "providers:", "providers: []\nold_providers:", []string{"providers"}},
		{"unknown limits key", "routes:", "limits: {request: {}}\nroutes:", []string{"limits", "request"}},
		{"misspelled response limit", "routes:", "limits: {response: {max_text: 10}}\nroutes:", []string{"limits.response", "max_text"}},
		{"negative response limit", "routes:", "limits: {response: {max_chunks: -1}}\nroutes:", []string{"limits.response.max_chunks"}},
		{"response limit over its maximum", "routes:", "limits: {response: {max_tool_calls: 5000}}\nroutes:", []string{"limits.response.max_tool_calls"}},
		{"tool result redact not a boolean", "routes:", "limits: {tool_result: {redact: sometimes}}\nroutes:", []string{"limits.tool_result.redact"}},
		{"unknown tool result key", "routes:", "limits: {tool_result: {truncate: true}}\nroutes:", []string{"limits.tool_result", "truncate"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(validDoc, tt.old) {
				t.Fatalf("validDoc has no %q", tt.old)
			}
			doc := strings.Replace(validDoc, tt.old, tt.new, 1)
			_, err := Parse([]byte(doc))
			if err == nil {
				t.Fatalf("Parse(%s) = nil; want a schema error", doc)
			}
			msg := err.Error()
			for _, want := range append([]string{"(schema rule: "}, tt.want...) {
				if !strings.Contains(msg, want) {
					t.Errorf("Parse(...) = %q; want it to mention %q", msg, want)
				}
			}
		})
	}
}

func TestParseSyntaxErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string
	}{
		{"empty", "", "empty config"},
		{"comment only", "# nothing\n", "empty config"},
		{"bad yaml", "providers: [\n", "yaml: "},
		{"tab indentation", "providers:\n\t- name: x\n", "yaml: "},
		{"not a mapping", "- a\n- b\n", "got array, want object (schema rule: type)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse(%q) = %v; want an error containing %q", tt.doc, err, tt.want)
			}
		})
	}
}

// TestParseSemanticErrors checks what the schema cannot: references and
// uniqueness. Every problem is reported, not just the first.
func TestParseSemanticErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{
			name: "route to unknown model",
			doc: `
providers: [{name: openai, api: openai_chat_completions, base_url: "https://api.openai.com/v1"}]
models: [{provider: openai, name: gpt-4o-mini}]
routes: [{name: default, targets: [{provider: openai, model: gpt-4o-mini}, {provider: backup, model: m2}]}]
`,
			want: []string{`routes[0] "default": targets[1]: no model backup/m2 is configured`},
		},
		{
			name: "duplicate provider",
			doc: `
providers:
  - {name: openai, api: openai_chat_completions, base_url: "https://api.openai.com/v1"}
  - {name: openai, api: openai_responses, base_url: "https://api.openai.com/v1"}
models: [{provider: openai, name: m}]
routes: [{name: default, targets: [{provider: openai, model: m}]}]
`,
			want: []string{`providers[1]: duplicate provider "openai"`},
		},
		{
			name: "missing default route",
			doc: `
providers: [{name: p, api: openai_chat_completions, base_url: "http://localhost:1"}]
models: [{provider: p, name: m}]
routes: [{name: fast, targets: [{provider: p, model: m}]}]
`,
			want: []string{`routes: a route named "default" is required`},
		},
		{
			name: "model of unknown provider",
			doc: `
providers: [{name: p, api: openai_chat_completions, base_url: "http://localhost:1"}]
models: [{provider: p, name: m}, {provider: q, name: m}]
routes: [{name: default, targets: [{provider: p, model: m}]}]
`,
			want: []string{`models[1] "m": unknown provider "q"`},
		},
		{
			name: "duplicate model and route",
			doc: `
providers: [{name: p, api: openai_chat_completions, base_url: "http://localhost:1"}]
models: [{provider: p, name: m}, {provider: p, name: m}]
routes: [{name: default, targets: [{provider: p, model: m}]}, {name: default, targets: [{provider: p, model: m}]}]
`,
			want: []string{`models[1]: duplicate model p/m`, `routes[1]: duplicate route "default"`},
		},
		{
			name: "tool ack wait under a second",
			doc: `
providers: [{name: p, api: openai_chat_completions, base_url: "http://localhost:1"}]
models: [{provider: p, name: m}]
routes: [{name: default, targets: [{provider: p, model: m}]}]
worker: {tool_ack_wait: 500ms}
`,
			want: []string{`worker: tool_ack_wait 500ms is too short: it must be at least 1s`},
		},
		{
			name: "every problem at once",
			doc: `
providers: [{name: p, api: openai_chat_completions, base_url: "http://localhost:1"}, {name: p, api: openai_responses, base_url: "http://localhost:2"}]
models: [{provider: x, name: m}]
routes: [{name: fast, targets: [{provider: p, model: nope}]}]
`,
			want: []string{`duplicate provider "p"`, `unknown provider "x"`, `no model p/nope is configured`, `a route named "default" is required`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc))
			if err == nil {
				t.Fatalf("Parse(%s) = nil; want an error", tt.doc)
			}
			if strings.Contains(err.Error(), "schema rule") {
				t.Fatalf("Parse(...) = %v; want a semantic error, not a schema error", err)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Parse(...) = %q; want it to mention %q", err, want)
				}
			}
		})
	}
}

// TestValidate covers checks the schema makes first, for configs built in
// code rather than parsed.
func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(c *Config)
		want   string // "" means valid
	}{
		{"mock is valid", func(*Config) {}, ""},
		{"no routes at all", func(c *Config) { c.Routes = nil }, ""},
		{"empty provider name", func(c *Config) { c.Providers[0].Name = "" }, "providers[0]: name is required"},
		{"unknown api", func(c *Config) { c.Providers[0].API = "grpc" }, `unknown api "grpc"`},
		{"relative base url", func(c *Config) { c.Providers[0].BaseURL = "localhost:8080" }, "base_url must be an http(s) URL"},
		{"both key sources", func(c *Config) { c.Providers[0].APIKeyEnv, c.Providers[0].APIKeyFile = "K", "/k" }, "not both"},
		{"route without targets", func(c *Config) { c.Routes[0].Targets = nil }, "at least one target is required"},
		{"negative response limit", func(c *Config) { c.Limits.Response.MaxTextBytes = -1 }, "limits.response.max_text_bytes: -1 is out of range"},
		{"zero limits take the defaults", func(c *Config) { c.Limits = Limits{} }, ""},
		{"line limit under a KiB", func(c *Config) { c.Limits.Response.MaxLineBytes = 100 }, "limits.response.max_line_bytes: 100 is out of range: it must be from 1024"},
		{"event limit over 64 MiB", func(c *Config) { c.Limits.Response.MaxEventBytes = 65 << 20 }, "limits.response.max_event_bytes: 68157440 is out of range"},
		{"too many chunks", func(c *Config) { c.Limits.Response.MaxChunks = 1 << 30 }, "limits.response.max_chunks"},
		{"tool result limit under a KiB", func(c *Config) { c.Limits.ToolResult.MaxBytes = 10 }, "limits.tool_result.max_bytes: 10 is out of range"},
		{"tool ack wait under a second", func(c *Config) { c.Worker.ToolAckWait = Duration(999 * time.Millisecond) }, "worker: tool_ack_wait 999ms is too short: it must be at least 1s"},
		{"tool ack wait of a second", func(c *Config) { c.Worker.ToolAckWait = Duration(time.Second) }, ""},
		{"line over event", func(c *Config) { c.Limits.Response.MaxLineBytes = 512 << 10 }, "max_line_bytes (524288) exceeds max_event_bytes (262144)"},
		{"event over stream", func(c *Config) { c.Limits.Response.MaxEventBytes, c.Limits.Response.MaxStreamBytes = 1<<20, 512<<10 },
			"max_event_bytes (1048576) exceeds max_stream_bytes (524288)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Mock("http://127.0.0.1:9/v1")
			tt.mutate(c)
			err := c.Validate()
			if tt.want == "" {
				if err != nil {
					t.Errorf("Validate() = %v; want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v; want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.yaml")
	if _, err := Load(missing); err == nil || !errors.Is(err, os.ErrNotExist) || !strings.HasPrefix(err.Error(), "config: ") {
		t.Errorf("Load(%q) = %v; want a \"config: \" error wrapping os.ErrNotExist", missing, err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(strings.Replace(validDoc, "openai_chat_completions", "openai_chat", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(bad)
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "providers[0].api") {
		t.Errorf("Load(%q) = %v; want an error naming the file and /providers/0/api", bad, err)
	}
}

func TestAPIKey(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte("  sk-from-file\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TURNSTREAM_TEST_KEY", "sk-from-env")
	t.Setenv("TURNSTREAM_TEST_EMPTY", "")
	c := &Config{}
	tests := []struct {
		name    string
		p       Provider
		want    string
		wantErr string
	}{
		{name: "env", p: Provider{Name: "a", APIKeyEnv: "TURNSTREAM_TEST_KEY"}, want: "sk-from-env"},
		{name: "file trimmed", p: Provider{Name: "b", APIKeyFile: keyFile}, want: "sk-from-file"},
		{name: "no key", p: Provider{Name: "c"}, want: ""},
		{name: "env unset", p: Provider{Name: "d", APIKeyEnv: "TURNSTREAM_TEST_UNSET_1234"}, wantErr: `provider "d": environment variable TURNSTREAM_TEST_UNSET_1234 is not set`},
		{name: "env empty", p: Provider{Name: "e", APIKeyEnv: "TURNSTREAM_TEST_EMPTY"}, wantErr: "TURNSTREAM_TEST_EMPTY is not set"},
		{name: "file missing", p: Provider{Name: "f", APIKeyFile: filepath.Join(dir, "nope")}, wantErr: `provider "f": key file`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.APIKey(tt.p)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("APIKey(%+v) = %q, %v; want an error containing %q", tt.p, got, err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "sk-") {
					t.Errorf("APIKey(%+v) error %q contains a key", tt.p, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("APIKey(%+v) = %q, %v; want %q, nil", tt.p, got, err, tt.want)
			}
		})
	}
}

func TestMock(t *testing.T) {
	const url = "http://127.0.0.1:18080/v1"
	c := Mock(url)
	if err := c.Validate(); err != nil {
		t.Fatalf("Mock(%q).Validate() = %v; want nil", url, err)
	}
	p, ok := c.Provider("mock")
	if !ok || p.API != "openai_chat_completions" || p.BaseURL != url || p.IdleTimeout != Duration(60*time.Second) {
		t.Errorf("Mock(%q).Provider(mock) = %+v, %v; want an openai_chat_completions provider at %s with defaults", url, p, ok, url)
	}
	if key, err := c.APIKey(p); key != "" || err != nil {
		t.Errorf("Mock(%q).APIKey(mock) = %q, %v; want \"\", nil", url, key, err)
	}
	r, ok := c.Route("")
	if !ok || r.Name != DefaultRoute || len(r.Targets) != 1 || r.Targets[0].String() != "mock/mock-1" {
		t.Errorf(`Mock(%q).Route("") = %+v, %v; want default -> mock/mock-1`, url, r, ok)
	}
	m, ok := c.Model(r.Targets[0])
	if !ok || !m.Tools() || m.ContextTokens != DefaultContextTokens {
		t.Errorf("Mock(%q).Model(mock/mock-1) = %+v, %v; want tools and the default context", url, m, ok)
	}
	if c.Budgets.MaxIterations != 8 || c.Worker.Concurrency != 64 {
		t.Errorf("Mock(%q) budgets/worker = %+v / %+v; want defaults applied", url, c.Budgets, c.Worker)
	}
}

func TestLookups(t *testing.T) {
	c := Mock("http://x")
	if _, ok := c.Provider("nope"); ok {
		t.Errorf(`Provider("nope") ok = true; want false`)
	}
	if _, ok := c.Model(Target{Provider: "mock", Model: "nope"}); ok {
		t.Errorf(`Model(mock/nope) ok = true; want false`)
	}
	if _, ok := c.Route("nope"); ok {
		t.Errorf(`Route("nope") ok = true; want false`)
	}
}

func TestDuration(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"90s", 90 * time.Second, false},
		{"2m", 2 * time.Minute, false},
		{"1h30m", 90 * time.Minute, false},
		{"1.5s", 1500 * time.Millisecond, false},
		{"250ms", 250 * time.Millisecond, false},
		{"10µs", 10 * time.Microsecond, false},
		{" 3s ", 3 * time.Second, false},
		{"0", 0, false},
		{"90", 0, true},
		{"ninety", 0, true},
		{"", 0, true},
	}
	for _, tt := range tests {
		var d Duration
		err := d.UnmarshalText([]byte(tt.in))
		if (err != nil) != tt.wantErr || d.D() != tt.want {
			t.Errorf("UnmarshalText(%q) = %v, %v; want %v, error %v", tt.in, d.D(), err, tt.want, tt.wantErr)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "config: duration") {
			t.Errorf("UnmarshalText(%q) error = %q; want a \"config: duration\" error", tt.in, err)
		}
		if err == nil {
			text, _ := d.MarshalText()
			var back Duration
			if err := back.UnmarshalText(text); err != nil || back != d {
				t.Errorf("UnmarshalText(MarshalText(%v) = %q) = %v, %v; want %v", d.D(), text, back.D(), err, d.D())
			}
		}
	}
}

func TestParseRetryCapabilitiesStream(t *testing.T) {
	c, err := Parse([]byte(`
providers:
  - name: openai
    api: openai_responses
    base_url: https://api.openai.com/v1
    stream: false
    retry: {mode: always, max_retries: -1, initial_delay: 250ms, max_delay: 5s, jitter: -1}
    capabilities: {native_tool_history: false, structured_output: true}
models:
  - {provider: openai, name: m, supports_tools: false, capabilities: {stateful_continuation: false}}
routes: [{name: default, targets: [{provider: openai, model: m}]}]
`))
	if err != nil {
		t.Fatalf("Parse() = %v", err)
	}
	p := c.Providers[0]
	if p.Streams() || p.Retry.Mode != "always" || p.Retry.MaxRetries != -1 || p.Retry.InitialDelay.D() != 250*time.Millisecond || p.Retry.Jitter != -1 {
		t.Errorf("provider = %+v; want stream false and the retry policy as written", p)
	}
	if p.Capabilities.NativeToolHistory == nil || *p.Capabilities.NativeToolHistory || c.Models[0].Capabilities.StatefulContinuation == nil {
		t.Errorf("capabilities = %+v / %+v; want the overrides as written", p.Capabilities, c.Models[0].Capabilities)
	}
	_, err = Parse([]byte(`
providers: [{name: openai, api: openai_chat_completions, base_url: "https://api.openai.com/v1", stream: false}]
models: [{provider: openai, name: m}]
routes: [{name: default, targets: [{provider: openai, model: m}]}]
`))
	if err == nil || !strings.Contains(err.Error(), "providers[0].stream") {
		t.Errorf("Parse(chat with stream false) = %v; want an error", err)
	}
}

// TestREADMEConfig keeps the README's full config example true to the code:
// every YAML block of README.md that holds a whole config must parse.
func TestREADMEConfig(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(b), "```yaml\n")
	n := 0
	for _, blk := range blocks[1:] {
		text, _, _ := strings.Cut(blk, "```")
		if !strings.Contains(text, "routes:") {
			continue // a fragment, not a whole config
		}
		n++
		if _, err := Parse([]byte(text)); err != nil {
			t.Errorf("README config example does not parse: %v\n%s", err, text)
		}
	}
	if n == 0 {
		t.Fatal("README.md has no whole config example")
	}
}

// TestParseLimits: limits set in a file are kept, the others take their
// defaults, and a cross-field problem is a semantic error naming the keys.
func TestParseLimits(t *testing.T) {
	const base = `
providers: [{name: p, api: openai_chat_completions, base_url: "http://localhost:1/v1"}]
models: [{provider: p, name: m}]
routes: [{name: default, targets: [{provider: p, model: m}]}]
`
	c, err := Parse([]byte(base + "limits: {response: {max_text_bytes: 1024, max_tool_calls: 4}, tool_result: {redact: false}}\n"))
	if err != nil {
		t.Fatalf("Parse(limits) = %v; want nil", err)
	}
	want := DefaultResponseLimits
	want.MaxTextBytes, want.MaxToolCalls = 1024, 4
	if c.Limits.Response != want {
		t.Errorf("Parse(limits).Limits.Response = %+v; want %+v", c.Limits.Response, want)
	}
	if c.Limits.ToolResult.Redacts() || c.Limits.ToolResult.MaxBytes != DefaultToolResultMaxBytes {
		t.Errorf("Parse(limits).Limits.ToolResult = %+v (redacts %v); want the default max_bytes, redaction off",
			c.Limits.ToolResult, c.Limits.ToolResult.Redacts())
	}

	_, err = Parse([]byte(base + "limits: {response: {max_line_bytes: 300000}}\n"))
	if err == nil || strings.Contains(err.Error(), "schema rule") ||
		!strings.Contains(err.Error(), "max_line_bytes (300000) exceeds max_event_bytes (262144)") {
		t.Errorf("Parse(line over the default event) = %v; want a semantic error naming both keys", err)
	}
}

// TestDefaultResponseLimitsFit checks the arithmetic the defaults are
// documented with: a chunk record (a frame, its delta at most twice the
// frame, an envelope) and a message record (the message limit and an
// envelope) fit NATS's default 1 MiB max payload less 4 KiB of headers.
func TestDefaultResponseLimitsFit(t *testing.T) {
	const record = 1<<20 - 4<<10
	d := DefaultResponseLimits
	if chunk := 3*d.MaxEventBytes + 2<<10; chunk > record {
		t.Errorf("chunk record of %d bytes; want at most %d", chunk, record)
	}
	if msg := d.MaxMessageBytes + 4<<10; msg > record {
		t.Errorf("message record of %d bytes; want at most %d", msg, record)
	}
	if d.MaxTextBytes > d.MaxMessageBytes || d.MaxArgumentBytes > d.MaxMessageBytes {
		t.Errorf("text (%d) or one call's arguments (%d) over the message limit (%d)", d.MaxTextBytes, d.MaxArgumentBytes, d.MaxMessageBytes)
	}
	if d.MaxLineBytes > d.MaxEventBytes || d.MaxEventBytes > d.MaxStreamBytes {
		t.Errorf("defaults line %d, event %d, stream %d; want line <= event <= stream", d.MaxLineBytes, d.MaxEventBytes, d.MaxStreamBytes)
	}
}

// TestREADMELimits keeps the README's limits block true to the defaults:
// parsed, it must give exactly the default limits.
func TestREADMELimits(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const base = `
providers: [{name: p, api: openai_chat_completions, base_url: "http://localhost:1/v1"}]
models: [{provider: p, name: m}]
routes: [{name: default, targets: [{provider: p, model: m}]}]
`
	found := false
	for _, blk := range strings.Split(string(b), "```yaml\n")[1:] {
		text, _, _ := strings.Cut(blk, "```")
		if !strings.HasPrefix(text, "limits:") {
			continue
		}
		found = true
		c, err := Parse([]byte(base + text))
		if err != nil {
			t.Fatalf("README limits block does not parse: %v", err)
		}
		if c.Limits.Response != DefaultResponseLimits {
			t.Errorf("README limits.response = %+v; want the defaults %+v", c.Limits.Response, DefaultResponseLimits)
		}
		if c.Limits.ToolResult.MaxBytes != DefaultToolResultMaxBytes || !c.Limits.ToolResult.Redacts() {
			t.Errorf("README limits.tool_result = %+v; want max_bytes %d, redact true", c.Limits.ToolResult, DefaultToolResultMaxBytes)
		}
	}
	if !found {
		t.Fatal("README.md has no limits block")
	}
}

package wire_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/turnstream/turnstream/pkg/wire"
	"github.com/turnstream/turnstream/schemas"
)

// allSchemas lists every schema constant; TestSchemaFiles checks it against
// the embedded files.
var allSchemas = []string{
	schemas.TurnRequest, schemas.Message, schemas.Chunk, schemas.ToolCall,
	schemas.ToolResult, schemas.SessionEvent, schemas.Cancel, schemas.Config,
}

// compile compiles one embedded schema with format assertions on, so
// "date-time" is checked.
func compile(t testing.TB, name string) *jsonschema.Schema {
	t.Helper()
	f, err := schemas.FS.Open(name)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(name, doc); err != nil {
		t.Fatalf("add %s: %v", name, err)
	}
	s, err := c.Compile(name)
	if err != nil {
		t.Fatalf("compile %s: %v", name, err)
	}
	return s
}

// validate validates JSON text against a compiled schema.
func validate(t testing.TB, s *jsonschema.Schema, data []byte) error {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("jsonschema.UnmarshalJSON(%s): %v", data, err)
	}
	return s.Validate(inst)
}

// rawSchema returns an embedded schema as a generic JSON document.
func rawSchema(t testing.TB, name string) map[string]any {
	t.Helper()
	b, err := fs.ReadFile(schemas.FS, name)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return m
}

// event is a pointer to ev, for the examples.
func event(ev wire.SessionEvent) *wire.SessionEvent { return &ev }

var (
	t0       = time.Date(2025, 3, 14, 15, 9, 26, 535897000, time.UTC)
	deadline = time.Date(2025, 3, 14, 15, 10, 26, 0, time.FixedZone("CET", 3600))
)

type example struct {
	name   string
	schema string
	value  any // a pointer to a record
}

// examples are realistic records of every public type.
func examples() []example {
	return []example{
		{"turn request full", schemas.TurnRequest, &wire.TurnRequest{
			SessionID: "s-01HQ", TurnID: "t_1",
			Input: []wire.InputMessage{
				{Role: wire.RoleSystem, Content: "Answer in French."},
				{Role: wire.RoleUser, Content: "What time is it in Paris? \"now\" \u2028 <b>"},
			},
			System: "You are terse.",
			Route:  "default",
			Tools: []wire.Tool{
				{Name: "get_time", Description: "Current time in a city.", Parameters: map[string]any{
					"type":       "object",
					"properties": map[string]any{"city": map[string]any{"type": "string", "maxLength": 64}},
					"required":   []any{"city"},
				}},
				{Name: "noop"},
			},
			Budgets: &wire.Budgets{MaxIterations: 8, MaxToolCalls: 16, MaxRepeatedToolFailures: 2, WallClockMS: 120000},
		}},
		{"turn request minimal", schemas.TurnRequest, &wire.TurnRequest{
			SessionID: "s1", Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "hi"}},
		}},
		{"message system", schemas.Message, &wire.Message{
			SessionID: "s1", TurnID: "t1", Seq: 1, Role: wire.RoleSystem, Content: "Be brief.", Time: t0,
		}},
		{"message user", schemas.Message, &wire.Message{
			SessionID: "s1", TurnID: "t1", Seq: 2, Role: wire.RoleUser, Content: "What time is it in Paris and Tokyo?", Time: t0,
		}},
		{"message assistant with tool calls", schemas.Message, &wire.Message{
			SessionID: "s1", TurnID: "t1", Step: 1, Seq: 3, Role: wire.RoleAssistant, Content: "",
			ToolCalls: []wire.Call{
				{ID: "call_s1_t1_1_0", Name: "get_time", Arguments: `{"city":"Paris"}`},
				{ID: "call_s1_t1_1_1", Name: "get_time", Arguments: `{"city": "Tokyo"}`},
			},
			FinishReason: wire.FinishToolCalls, RawFinishReason: "tool_calls",
			Provider: "openai", Model: "gpt-4o-mini",
			Usage: &wire.Usage{InputTokens: 812, CachedInputTokens: 256, OutputTokens: 41, ReasoningTokens: 12},
			Time:  t0,
		}},
		{"message assistant final", schemas.Message, &wire.Message{
			SessionID: "s1", TurnID: "t1", Step: 2, Seq: 6, Role: wire.RoleAssistant,
			Content:      "Paris: 16:09, Tokyo: 00:09.",
			FinishReason: wire.FinishStop, RawFinishReason: "stop", Provider: "openai", Model: "gpt-4o-mini",
			Usage: &wire.Usage{InputTokens: 900, OutputTokens: 11}, Time: t0,
		}},
		{"message tool", schemas.Message, &wire.Message{
			SessionID: "s1", TurnID: "t1", Step: 1, Seq: 4, Role: wire.RoleTool,
			Content: "16:09", ToolCallID: "call_s1_t1_1_0", Time: t0,
		}},
		{"message tool synthesized error", schemas.Message, &wire.Message{
			SessionID: "s1", TurnID: "t1", Step: 1, Seq: 5, Role: wire.RoleTool,
			Content: "tool get_time did not answer before its deadline", ToolCallID: "call_s1_t1_1_1",
			IsError: true, Synthesized: true, Time: t0,
		}},
		{"chunk json frame with delta", schemas.Chunk, &wire.Chunk{
			SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 1, Seq: 3, Provider: "openai", Model: "gpt-4o-mini",
			Delta: &wire.Delta{Text: "Hello <"},
		}},
		{"chunk tool call delta", schemas.Chunk, &wire.Chunk{
			SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 2, Seq: 7, Provider: "backup", Model: "m2",
			Delta: &wire.Delta{
				ToolCalls: []wire.ToolCallDelta{
					{Index: 0, Start: true, Name: "get_time", Arguments: `{"ci`},
					{Index: 1, Arguments: `ty":"Tokyo"}`, End: true},
				},
				Usage:        &wire.Usage{InputTokens: 10, OutputTokens: 3},
				FinishReason: wire.FinishToolCalls, RawFinishReason: "tool_calls",
			},
		}},
		{"chunk responses event", schemas.Chunk, &wire.Chunk{
			SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 1, Seq: 1, Provider: "oai", Model: "o4-mini",
			Event: "response.output_text.delta",
			Delta: &wire.Delta{Text: "Hi"},
		}},
		{"chunk done sentinel", schemas.Chunk, &wire.Chunk{
			SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 1, Seq: 9, Provider: "openai", Model: "gpt-4o-mini",
		}},
		{"chunk marker completed", schemas.Chunk, &wire.Chunk{
			SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 1, Seq: 10, Marker: wire.MarkerCompleted,
		}},
		{"chunk marker retrying", schemas.Chunk, &wire.Chunk{
			SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 1, Seq: 4, Provider: "openai", Model: "gpt-4o-mini",
			Marker: wire.MarkerRetrying, Failure: "RATE_LIMIT", HTTPStatus: 429, ProviderDelayMS: 1100, RequestID: "req_abc",
		}},
		{"tool call", schemas.ToolCall, &wire.ToolCall{
			SessionID: "s1", TurnID: "t1", Step: 1, CallID: "call_s1_t1_1_0", Name: "get_time",
			Arguments: `{"city":"Paris"}`, Deadline: deadline, Token: "Xq3vM0b9Gmq2cZk7pQ1sT8wYh4nL6aRfE5dJ0uCiV2o",
		}},
		{"tool result", schemas.ToolResult, &wire.ToolResult{
			SessionID: "s1", TurnID: "t1", CallID: "call_s1_t1_1_0", Token: "Xq3vM0b9Gmq2cZk7pQ1sT8wYh4nL6aRfE5dJ0uCiV2o", Content: "16:09",
		}},
		{"tool result error", schemas.ToolResult, &wire.ToolResult{
			SessionID: "s1", TurnID: "t1", CallID: "call_s1_t1_1_1", Token: "b7Kp2", Content: "unknown city", IsError: true,
		}},
		{"tool result synthesized", schemas.ToolResult, &wire.ToolResult{
			SessionID: "s1", TurnID: "t1", CallID: "call_s1_t1_1_2", Token: "c9Lq3", IsError: true, Synthesized: true,
			Content: "error: tool outcome unknown: the tool worker running this call stopped before it reported a result; the call may or may not have taken effect",
		}},
		{"event turn accepted", schemas.SessionEvent, event(wire.NewEvent("s1", "t1", 0, 0, t0, wire.TurnAccepted{
			Delivery: 1, InputMessages: 2, Tools: 1, MaxIterations: 8, MaxToolCalls: 16, WallClockMS: 120000,
		}))},
		{"event turn rejected", schemas.SessionEvent, event(wire.NewEvent("s1", "", 0, 0, t0, wire.TurnRejected{
			Reason: wire.ReasonUnknownField, Field: "tools[0].parameters",
		}))},
		{"event llm retry", schemas.SessionEvent, event(wire.NewEvent("s1", "t1", 1, 2, t0, wire.LLMRetry{
			LLMAttempt: wire.LLMAttempt{Provider: "openai", Model: "gpt-4o-mini", Class: wire.ClassRateLimit,
				HTTPStatus: 429, RequestID: "req_abc", ProviderDelayMS: 1100},
			Policy: wire.RetryNormal, Retry: 1, DelayMS: 1250,
		}))},
		{"event tool dispatched", schemas.SessionEvent, event(wire.NewEvent("s1", "t1", 1, 0, t0, wire.ToolDispatched{
			ToolCallRef: wire.ToolCallRef{Tool: "get_time", CallID: "call_s1_t1_1_0"}, DeadlineMS: 60000,
		}))},
		{"event tool result rejected", schemas.SessionEvent, event(wire.NewEvent("s1", "t1", 1, 0, t0, wire.ToolResultRejected{
			Reason: wire.ResultRejectedBadToken, Tool: "get_time", CallID: "call_s1_t1_1_0",
		}))},
		{"event turn completed", schemas.SessionEvent, event(wire.NewEvent("s1", "t1", 0, 0, t0, wire.TurnCompleted{
			Steps: 2, ToolCalls: 2, InputTokens: 1712, OutputTokens: 52, DurationMS: 3400, FinishReason: wire.FinishStop,
		}))},
		{"event history skipped without payload", schemas.SessionEvent, &wire.SessionEvent{
			Type: wire.EventHistorySkipped, SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 1, Time: t0,
		}},
		// A type added after this schema: its payload follows the rule
		// every payload does (flat, scalar, bounded), nothing more.
		{"event of a later type", schemas.SessionEvent, &wire.SessionEvent{
			Type: "tool.batch-dispatched", SessionID: "s1", TurnID: "t1", Step: 1, Time: t0,
			Payload: map[string]any{"calls": 2, "tools": []string{"get_time", "get_time"}, "indexes": []int{0, 1}},
		}},
		{"cancel any", schemas.Cancel, &wire.Cancel{}},
		{"cancel turn", schemas.Cancel, &wire.Cancel{TurnID: "t1"}},
	}
}

func TestSchemaFiles(t *testing.T) {
	files, err := fs.Glob(schemas.FS, "*.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := slices.Sorted(slices.Values(files)), slices.Sorted(slices.Values(allSchemas)); !slices.Equal(got, want) {
		t.Fatalf("embedded schema files = %v; want %v", got, want)
	}
	for _, name := range allSchemas {
		t.Run(name, func(t *testing.T) {
			compile(t, name)
			doc := rawSchema(t, name)
			if got, want := doc["$schema"], "https://json-schema.org/draft/2020-12/schema"; got != want {
				t.Errorf("$schema = %v; want %v", got, want)
			}
			if id, _ := doc["$id"].(string); !strings.HasPrefix(id, "https://") || !strings.HasSuffix(id, "/"+name) {
				t.Errorf("$id = %q; want an https URL ending in /%s", id, name)
			}
			for _, k := range []string{"title", "description"} {
				if s, _ := doc[k].(string); s == "" {
					t.Errorf("%s = %q; want a non-empty string", k, s)
				}
			}
			checkDocumented(t, "#", doc)
		})
	}
}

// checkDocumented fails for every property, anywhere in a schema document,
// that lacks a title or a description, and for every object schema with
// properties that does not close itself to unknown ones. Conditions (if,
// then, else, not) only constrain properties documented where they are
// declared, so they are not walked.
func checkDocumented(t *testing.T, ptr string, node any) {
	t.Helper()
	switch k := ptr[strings.LastIndex(ptr, "/")+1:]; k {
	case "if", "then", "else", "not":
		return
	}
	switch n := node.(type) {
	case map[string]any:
		if props, ok := n["properties"].(map[string]any); ok {
			for name, p := range props {
				pm, _ := p.(map[string]any)
				for _, k := range []string{"title", "description"} {
					if s, _ := pm[k].(string); s == "" {
						t.Errorf("%s/properties/%s: %s = %q; want a non-empty string", ptr, name, k, s)
					}
				}
			}
			_, closed := n["additionalProperties"]
			_, uneval := n["unevaluatedProperties"]
			_, referenced := n["$ref"]
			parent := ptr[strings.LastIndex(ptr, "/")+1:]
			// A schema reached only through $ref (budget_values), or a
			// parameters schema (any JSON Schema), may stay open.
			if !closed && !uneval && !referenced && parent != "budget_values" && parent != "parameters" {
				t.Errorf("%s: object with properties has neither additionalProperties nor unevaluatedProperties", ptr)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(n)) {
			checkDocumented(t, ptr+"/"+k, n[k])
		}
	case []any:
		for i, v := range n {
			checkDocumented(t, ptr+"/"+strconv.Itoa(i), v)
		}
	}
}

// TestSchemaMatchesGoTypes compares each schema's properties and required
// list with the json tags of the Go type it describes, so the two cannot
// drift: a field without omitempty is required, one with it is optional.
func TestSchemaMatchesGoTypes(t *testing.T) {
	tests := []struct {
		schema string
		ptr    string
		typ    reflect.Type
	}{
		{schemas.TurnRequest, "", reflect.TypeFor[wire.TurnRequest]()},
		{schemas.TurnRequest, "/$defs/input_message", reflect.TypeFor[wire.InputMessage]()},
		{schemas.TurnRequest, "/$defs/tool", reflect.TypeFor[wire.Tool]()},
		{schemas.TurnRequest, "/$defs/budgets", reflect.TypeFor[wire.Budgets]()},
		{schemas.Message, "", reflect.TypeFor[wire.Message]()},
		{schemas.Message, "/$defs/call", reflect.TypeFor[wire.Call]()},
		{schemas.Message, "/$defs/usage", reflect.TypeFor[wire.Usage]()},
		{schemas.Chunk, "/$defs/delta", reflect.TypeFor[wire.Delta]()},
		{schemas.Chunk, "/$defs/tool_call_delta", reflect.TypeFor[wire.ToolCallDelta]()},
		{schemas.Chunk, "/$defs/usage", reflect.TypeFor[wire.Usage]()},
		{schemas.ToolCall, "", reflect.TypeFor[wire.ToolCall]()},
		{schemas.ToolResult, "", reflect.TypeFor[wire.ToolResult]()},
		{schemas.SessionEvent, "", reflect.TypeFor[wire.SessionEvent]()},
		{schemas.Cancel, "", reflect.TypeFor[wire.Cancel]()},
	}
	for _, tt := range tests {
		t.Run(tt.schema+"#"+tt.ptr, func(t *testing.T) {
			node := lookup(t, rawSchema(t, tt.schema), tt.ptr)
			gotProps, gotReq := schemaFields(node)
			wantProps, wantReq := jsonFields(tt.typ)
			if !slices.Equal(gotProps, wantProps) {
				t.Errorf("properties of %s#%s = %v; want %v (json tags of %v)", tt.schema, tt.ptr, gotProps, wantProps, tt.typ)
			}
			if !slices.Equal(gotReq, wantReq) {
				t.Errorf("required of %s#%s = %v; want %v (fields of %v without omitempty)", tt.schema, tt.ptr, gotReq, wantReq, tt.typ)
			}
		})
	}
	// Chunk's JSON is written by hand (AppendJSON); check the schema against
	// what a fully populated chunk encodes to.
	t.Run("chunk", func(t *testing.T) {
		gotProps, gotReq := schemaFields(rawSchema(t, schemas.Chunk))
		keys := map[string]bool{}
		c := &wire.Chunk{SessionID: "s", TurnID: "t", Step: 1, Attempt: 1, Seq: 1, Provider: "p", Model: "m",
			Event: "e", Delta: &wire.Delta{Text: "x"}, Marker: wire.MarkerFailed, Failure: "server",
			HTTPStatus: 503, ProviderDelayMS: 1500, RequestID: "req_1"}
		for k := range jsonObject(t, c) {
			keys[k] = true
		}
		if want := slices.Sorted(maps.Keys(keys)); !slices.Equal(gotProps, want) {
			t.Errorf("properties of %s = %v; want %v", schemas.Chunk, gotProps, want)
		}
		empty := jsonObject(t, &wire.Chunk{})
		if want := slices.Sorted(maps.Keys(empty)); !slices.Equal(gotReq, want) {
			t.Errorf("required of %s = %v; want %v (the keys of an empty chunk)", schemas.Chunk, gotReq, want)
		}
	})
}

func lookup(t *testing.T, doc map[string]any, ptr string) map[string]any {
	t.Helper()
	node := doc
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		if tok == "" {
			continue
		}
		next, ok := node[tok].(map[string]any)
		if !ok {
			t.Fatalf("no %s in schema", ptr)
		}
		node = next
	}
	return node
}

func schemaFields(node map[string]any) (props, required []string) {
	p, _ := node["properties"].(map[string]any)
	props = slices.Sorted(maps.Keys(p))
	r, _ := node["required"].([]any)
	for _, v := range r {
		required = append(required, v.(string))
	}
	slices.Sort(required)
	return props, required
}

// jsonFields returns the JSON names of typ's fields and those without
// omitempty.
func jsonFields(typ reflect.Type) (props, required []string) {
	for f := range typ.Fields() {
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		props = append(props, name)
		if !slices.Contains(strings.Split(opts, ","), "omitempty") {
			required = append(required, name)
		}
	}
	slices.Sort(props)
	slices.Sort(required)
	return props, required
}

func jsonObject(t testing.TB, v any) map[string]json.RawMessage {
	t.Helper()
	b, err := wire.JSON.Marshal(v)
	if err != nil {
		t.Fatalf("JSON.Marshal(%+v): %v", v, err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("json.Unmarshal(%s): %v", b, err)
	}
	return m
}

func TestExamplesMatchSchemas(t *testing.T) {
	compiled := map[string]*jsonschema.Schema{}
	for _, name := range allSchemas {
		compiled[name] = compile(t, name)
	}
	covered := map[string]bool{}
	for _, ex := range examples() {
		t.Run(ex.name, func(t *testing.T) {
			covered[ex.schema] = true
			b, err := wire.JSON.Marshal(ex.value)
			if err != nil {
				t.Fatalf("JSON.Marshal(%+v) error = %v", ex.value, err)
			}
			if err := validate(t, compiled[ex.schema], b); err != nil {
				t.Errorf("validate(%s, %s) = %v; want nil", ex.schema, b, err)
			}
		})
	}
	for _, name := range allSchemas {
		if name != schemas.Config && !covered[name] {
			t.Errorf("no example validates against %s", name)
		}
	}
}

// TestEventTypesMatchSchema checks every event type against the type
// pattern of the SessionEvent schema, with no payload and with its payload
// type's fields all set.
func TestEventTypesMatchSchema(t *testing.T) {
	s := compile(t, schemas.SessionEvent)
	for _, p := range wire.EventPayloads() {
		t.Run(p.EventType(), func(t *testing.T) {
			bare := wire.SessionEvent{Type: p.EventType(), SessionID: "s1", TurnID: "t1", Time: t0}
			for _, ev := range []wire.SessionEvent{
				bare,
				wire.NewEvent("s1", "t1", 1, 1, t0, filled(t, p)),
			} {
				b, err := wire.JSON.Marshal(&ev)
				if err != nil {
					t.Fatal(err)
				}
				if err := validate(t, s, b); err != nil {
					t.Errorf("validate(%s) = %v; want nil", b, err)
				}
			}
		})
	}
}

// TestSchemasReject mutates valid records and checks that each mutation
// fails validation at the mutated location.
func TestSchemasReject(t *testing.T) {
	byName := map[string]example{}
	for _, ex := range examples() {
		byName[ex.name] = ex
	}
	tests := []struct {
		name    string
		example string
		mutate  func(m map[string]any)
		wantAt  string // instance location the error must name
	}{
		{"request bad session id", "turn request full", func(m map[string]any) { m["session_id"] = "s 1" }, "'/session_id'"},
		{"request session id too long", "turn request minimal", func(m map[string]any) { m["session_id"] = strings.Repeat("s", 129) }, "'/session_id'"},
		{"request session id with dot", "turn request minimal", func(m map[string]any) { m["session_id"] = "s.1" }, "'/session_id'"},
		{"request empty turn id", "turn request minimal", func(m map[string]any) { m["turn_id"] = "" }, "'/turn_id'"},
		{"request unknown field", "turn request minimal", func(m map[string]any) { m["sesion_id"] = "s1" }, "sesion_id"},
		{"request missing input", "turn request minimal", func(m map[string]any) { delete(m, "input") }, "input"},
		{"request empty input", "turn request minimal", func(m map[string]any) { m["input"] = []any{} }, "'/input'"},
		{"request null input", "turn request minimal", func(m map[string]any) { m["input"] = nil }, "'/input'"},
		{"request assistant input", "turn request minimal", func(m map[string]any) {
			m["input"] = []any{map[string]any{"role": "assistant", "content": "x"}}
		}, "'/input/0/role'"},
		{"request bad route", "turn request minimal", func(m map[string]any) { m["route"] = "a/b" }, "'/route'"},
		{"request bad tool name", "turn request full", func(m map[string]any) {
			m["tools"].([]any)[0].(map[string]any)["name"] = "get time"
		}, "'/tools/0/name'"},
		{"request tool name too long", "turn request full", func(m map[string]any) {
			m["tools"].([]any)[0].(map[string]any)["name"] = strings.Repeat("t", 65)
		}, "'/tools/0/name'"},
		{"request array parameters", "turn request full", func(m map[string]any) {
			m["tools"].([]any)[0].(map[string]any)["parameters"] = map[string]any{"type": "array"}
		}, "'/tools/0/parameters/type'"},
		{"request negative budget", "turn request full", func(m map[string]any) {
			m["budgets"].(map[string]any)["max_tool_calls"] = -1
		}, "'/budgets/max_tool_calls'"},
		{"request unknown budget", "turn request full", func(m map[string]any) {
			m["budgets"].(map[string]any)["max_tokens"] = 10
		}, "max_tokens"},
		{"message unknown role", "message user", func(m map[string]any) { m["role"] = "robot" }, "'/role'"},
		{"message unknown field", "message user", func(m map[string]any) { m["reasoning"] = "secret" }, "reasoning"},
		{"message unknown finish reason", "message assistant final", func(m map[string]any) { m["finish_reason"] = "end_turn" }, "'/finish_reason'"},
		{"message seq zero", "message user", func(m map[string]any) { m["seq"] = 0 }, "'/seq'"},
		{"message bad time", "message user", func(m map[string]any) { m["time"] = "yesterday" }, "'/time'"},
		{"message call without id", "message assistant with tool calls", func(m map[string]any) {
			delete(m["tool_calls"].([]any)[1].(map[string]any), "id")
		}, "'/tool_calls/1'"},
		{"message usage missing output", "message assistant with tool calls", func(m map[string]any) {
			delete(m["usage"].(map[string]any), "output_tokens")
		}, "'/usage'"},
		{"chunk provider bytes", "chunk json frame with delta", func(m map[string]any) {
			m["raw"] = map[string]any{"choices": []any{}}
		}, "raw"},
		{"chunk unknown marker", "chunk marker completed", func(m map[string]any) { m["marker"] = "done" }, "'/marker'"},
		{"chunk failure without marker", "chunk json frame with delta", func(m map[string]any) { m["failure"] = "server" }, "failure"},
		{"chunk attempt zero", "chunk json frame with delta", func(m map[string]any) { m["attempt"] = 0 }, "'/attempt'"},
		{"chunk reasoning in delta", "chunk json frame with delta", func(m map[string]any) {
			m["delta"].(map[string]any)["reasoning"] = "thinking"
		}, "reasoning"},
		{"chunk provider text", "chunk done sentinel", func(m map[string]any) { m["raw_text"] = "[DONE]" }, "raw_text"},
		{"tool call bad name", "tool call", func(m map[string]any) { m["name"] = "a.b" }, "'/name'"},
		{"tool call bad deadline", "tool call", func(m map[string]any) { m["deadline"] = "2025-03-14 15:10" }, "'/deadline'"},
		{"tool call missing deadline", "tool call", func(m map[string]any) { delete(m, "deadline") }, "deadline"},
		{"tool result empty call id", "tool result", func(m map[string]any) { m["call_id"] = "" }, "'/call_id'"},
		{"tool result missing token", "tool result", func(m map[string]any) { delete(m, "token") }, "token"},
		{"tool result bad token", "tool result", func(m map[string]any) { m["token"] = "a.b" }, "'/token'"},
		{"tool call missing token", "tool call", func(m map[string]any) { delete(m, "token") }, "token"},
		{"tool call empty token", "tool call", func(m map[string]any) { m["token"] = "" }, "'/token'"},
		{"tool result unknown field", "tool result", func(m map[string]any) { m["error"] = true }, "error"},
		{"event nested payload object", "event llm retry", func(m map[string]any) {
			m["payload"].(map[string]any)["usage"] = map[string]any{"input_tokens": 1}
		}, "'/payload/usage'"},
		{"event payload array of objects", "event of a later type", func(m map[string]any) {
			m["payload"].(map[string]any)["calls"] = []any{map[string]any{"name": "x"}}
		}, "'/payload/calls'"},
		{"event payload nested array", "event of a later type", func(m map[string]any) {
			m["payload"].(map[string]any)["indexes"] = []any{[]any{0}}
		}, "'/payload/indexes'"},
		{"event payload null", "event turn accepted", func(m map[string]any) {
			m["payload"].(map[string]any)["tools"] = nil
		}, "'/payload/tools'"},
		{"event payload long string", "event turn rejected", func(m map[string]any) {
			m["payload"].(map[string]any)["field"] = strings.Repeat("x", 129)
		}, "'/payload/field'"},
		{"event payload long string in array", "event of a later type", func(m map[string]any) {
			m["payload"].(map[string]any)["tools"] = []any{strings.Repeat("x", 129)}
		}, "'/payload/tools'"},
		{"event payload camelCase key", "event of a later type", func(m map[string]any) {
			m["payload"].(map[string]any)["inputMessages"] = 2
		}, "inputMessages"},
		{"event payload key its type lacks", "event turn completed", func(m map[string]any) {
			m["payload"].(map[string]any)["content"] = "hello"
		}, "content"},
		{"event payload key its type requires", "event turn accepted", func(m map[string]any) {
			delete(m["payload"].(map[string]any), "resumed")
		}, "resumed"},
		{"event payload unknown enum value", "event turn completed", func(m map[string]any) {
			m["payload"].(map[string]any)["finish_reason"] = "end_turn"
		}, "'/payload/finish_reason'"},
		{"event payload unknown reason", "event turn rejected", func(m map[string]any) {
			m["payload"].(map[string]any)["reason"] = "because"
		}, "'/payload/reason'"},
		{"event payload string count", "event llm retry", func(m map[string]any) {
			m["payload"].(map[string]any)["retry"] = "1"
		}, "'/payload/retry'"},
		{"event payload fractional count", "event tool dispatched", func(m map[string]any) {
			m["payload"].(map[string]any)["deadline_ms"] = 1.5
		}, "'/payload/deadline_ms'"},
		{"event payload tool name with spaces", "event tool dispatched", func(m map[string]any) {
			m["payload"].(map[string]any)["tool"] = "get time"
		}, "'/payload/tool'"},
		{"event payload not object", "event turn accepted", func(m map[string]any) { m["payload"] = []any{1} }, "'/payload'"},
		{"event missing time", "event turn accepted", func(m map[string]any) { delete(m, "time") }, "time"},
		{"event step zero", "event llm retry", func(m map[string]any) { m["step"] = 0 }, "'/step'"},
		{"event unknown field", "event turn accepted", func(m map[string]any) { m["content"] = "hello" }, "content"},
		{"cancel unknown field", "cancel turn", func(m map[string]any) { m["session_id"] = "s1" }, "session_id"},
		{"cancel bad turn id", "cancel turn", func(m map[string]any) { m["turn_id"] = "t/1" }, "'/turn_id'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex, ok := byName[tt.example]
			if !ok {
				t.Fatalf("no example %q", tt.example)
			}
			s := compile(t, ex.schema)
			b, err := wire.JSON.Marshal(ex.value)
			if err != nil {
				t.Fatal(err)
			}
			if err := validate(t, s, b); err != nil {
				t.Fatalf("base example %q does not validate: %v", tt.example, err)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			tt.mutate(m)
			mutated, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			err = validate(t, s, mutated)
			if err == nil {
				t.Fatalf("validate(%s, %s) = nil; want an error at %s", ex.schema, mutated, tt.wantAt)
			}
			if _, ok := err.(*jsonschema.ValidationError); !ok {
				t.Fatalf("validate(%s) error = %T %v; want *jsonschema.ValidationError", mutated, err, err)
			}
			if !strings.Contains(err.Error(), tt.wantAt) {
				t.Errorf("validate(%s) = %v; want an error naming %s", mutated, err, tt.wantAt)
			}
		})
	}
}

// TestMsgpackMatchesJSON encodes every example with both codecs and checks
// that msgpack carries the same field names and values as JSON, and that
// decoding either gives the same record.
func TestMsgpackMatchesJSON(t *testing.T) {
	for _, ex := range examples() {
		t.Run(ex.name, func(t *testing.T) {
			typ := reflect.TypeOf(ex.value).Elem()
			jb, err := wire.JSON.Marshal(ex.value)
			if err != nil {
				t.Fatalf("JSON.Marshal(%+v) error = %v", ex.value, err)
			}
			mb, err := wire.Msgpack.Marshal(ex.value)
			if err != nil {
				t.Fatalf("Msgpack.Marshal(%+v) error = %v", ex.value, err)
			}

			// Field names and values, compared on the generic documents.
			var jdoc any
			if err := json.Unmarshal(jb, &jdoc); err != nil {
				t.Fatalf("json.Unmarshal(%s): %v", jb, err)
			}
			var mdoc map[string]any
			if err := msgpack.Unmarshal(mb, &mdoc); err != nil {
				t.Fatalf("msgpack.Unmarshal(%x): %v", mb, err)
			}
			sameDoc(t, "", jdoc, mdoc)

			// Decoded records, compared through their canonical JSON.
			fromJSON := reflect.New(typ).Interface()
			if err := wire.JSON.UnmarshalStrict(jb, fromJSON); err != nil {
				t.Fatalf("JSON.UnmarshalStrict(%s) error = %v", jb, err)
			}
			fromMsgpack := reflect.New(typ).Interface()
			if err := wire.Msgpack.UnmarshalStrict(mb, fromMsgpack); err != nil {
				t.Fatalf("Msgpack.UnmarshalStrict(%x) error = %v", mb, err)
			}
			want := canonical(t, ex.value)
			if got := canonical(t, fromJSON); got != want {
				t.Errorf("JSON round trip = %s; want %s", got, want)
			}
			if got := canonical(t, fromMsgpack); got != want {
				t.Errorf("msgpack round trip = %s; want %s", got, want)
			}
		})
	}
}

// sameDoc compares a JSON document with a msgpack one: the same keys at
// every level, and the same values (times as RFC 3339 strings in JSON,
// numbers compared numerically).
func sameDoc(t *testing.T, path string, j, m any) {
	t.Helper()
	switch jv := j.(type) {
	case map[string]any:
		mv, ok := m.(map[string]any)
		if !ok {
			t.Errorf("msgpack %s = %T; want an object", path, m)
			return
		}
		jk, mk := slices.Sorted(maps.Keys(jv)), slices.Sorted(maps.Keys(mv))
		if !slices.Equal(jk, mk) {
			t.Errorf("msgpack keys at %s = %v; want the JSON keys %v", path, mk, jk)
			return
		}
		for _, k := range jk {
			sameDoc(t, path+"/"+k, jv[k], mv[k])
		}
	case []any:
		mv, ok := m.([]any)
		if !ok || len(mv) != len(jv) {
			t.Errorf("msgpack %s = %#v; want %d elements", path, m, len(jv))
			return
		}
		for i := range jv {
			sameDoc(t, path+"/"+strconv.Itoa(i), jv[i], mv[i])
		}
	case float64:
		rv := reflect.ValueOf(m)
		var f float64
		switch {
		case rv.CanInt():
			f = float64(rv.Int())
		case rv.CanUint():
			f = float64(rv.Uint())
		case rv.CanFloat():
			f = rv.Float()
		default:
			t.Errorf("msgpack %s = %T %v; want the number %v", path, m, m, jv)
			return
		}
		if f != jv {
			t.Errorf("msgpack %s = %v; want %v", path, f, jv)
		}
	case string:
		if tm, ok := m.(time.Time); ok {
			jt, err := time.Parse(time.RFC3339Nano, jv)
			if err != nil || !jt.Equal(tm) {
				t.Errorf("msgpack %s = %v; want the time %s", path, tm, jv)
			}
			return
		}
		if m != jv {
			t.Errorf("msgpack %s = %#v; want %q", path, m, jv)
		}
	default: // bool, nil
		if m != j {
			t.Errorf("msgpack %s = %#v; want %#v", path, m, j)
		}
	}
}

// canonical returns v's JSON with times in UTC, so records decoded from
// either codec compare by value.
func canonical(t *testing.T, v any) string {
	t.Helper()
	b, err := wire.JSON.Marshal(v)
	if err != nil {
		t.Fatalf("JSON.Marshal(%+v): %v", v, err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	doc = utcTimes(doc)
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func utcTimes(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = utcTimes(e)
		}
	case []any:
		for i, e := range x {
			x[i] = utcTimes(e)
		}
	case string:
		if tm, err := time.Parse(time.RFC3339Nano, x); err == nil && strings.Contains(x, "T") {
			return tm.UTC().Format(time.RFC3339Nano)
		}
	}
	return v
}

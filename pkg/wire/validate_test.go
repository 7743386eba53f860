package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

func validRequest() *TurnRequest {
	return &TurnRequest{
		SessionID: "s1",
		TurnID:    "t1",
		Input: []InputMessage{
			{Role: RoleSystem, Content: "Be brief."},
			{Role: RoleUser, Content: "What time is it in Paris?"},
		},
		System: "You are a clock.",
		Route:  "default",
		Tools: []Tool{
			{Name: "get_time", Description: "Current time.", Parameters: map[string]any{
				"type":       "object",
				"properties": map[string]any{"city": map[string]any{"type": "string"}},
			}},
			{Name: "noop"},
		},
		Budgets: &Budgets{MaxIterations: 4, MaxToolCalls: 8, MaxRepeatedToolFailures: 1, WallClockMS: 60000},
	}
}

func TestTurnRequestValidate(t *testing.T) {
	tests := []struct {
		name       string
		mutate     func(r *TurnRequest)
		subject    string // the subject's session token; "" means "s1"
		lim        Limits
		wantReason string // "" means valid
		wantField  string
	}{
		{name: "valid full"},
		{name: "valid minimal", mutate: func(r *TurnRequest) {
			*r = TurnRequest{SessionID: "s1", TurnID: "t1", Input: []InputMessage{{Role: RoleUser, Content: ""}}}
		}},
		{name: "valid max length ids", subject: strings.Repeat("S", 128), mutate: func(r *TurnRequest) {
			r.SessionID, r.TurnID = strings.Repeat("S", 128), strings.Repeat("t", 128)
		}},
		{name: "valid id charset", subject: "AZaz09_-", mutate: func(r *TurnRequest) { r.SessionID = "AZaz09_-" }},
		{name: "valid no route", mutate: func(r *TurnRequest) { r.Route = "" }},
		{name: "valid zero budgets", mutate: func(r *TurnRequest) { r.Budgets = &Budgets{} }},
		{name: "valid tool name of 64", mutate: func(r *TurnRequest) { r.Tools[0].Name = strings.Repeat("x", 64) }},
		{name: "valid parameters without type", mutate: func(r *TurnRequest) { r.Tools[0].Parameters = map[string]any{"properties": map[string]any{}} }},
		{name: "valid at limits", lim: Limits{MaxInputMessages: 2, MaxContentBytes: 25, MaxTools: 2, MaxToolSchemaBytes: 200}},

		{name: "empty session id", mutate: func(r *TurnRequest) { r.SessionID = "" }, wantReason: ReasonInvalidSessionID, wantField: "session_id"},
		{name: "session id with dot", subject: "s.1", mutate: func(r *TurnRequest) { r.SessionID = "s.1" }, wantReason: ReasonInvalidSessionID, wantField: "session_id"},
		{name: "session id wildcard", subject: "*", mutate: func(r *TurnRequest) { r.SessionID = "*" }, wantReason: ReasonInvalidSessionID, wantField: "session_id"},
		{name: "session id too long", subject: strings.Repeat("s", 129), mutate: func(r *TurnRequest) { r.SessionID = strings.Repeat("s", 129) }, wantReason: ReasonInvalidSessionID, wantField: "session_id"},
		{name: "session mismatch", subject: "s2", wantReason: ReasonSessionMismatch, wantField: "session_id"},
		{name: "empty turn id", mutate: func(r *TurnRequest) { r.TurnID = "" }, wantReason: ReasonInvalidTurnID, wantField: "turn_id"},
		{name: "turn id with space", mutate: func(r *TurnRequest) { r.TurnID = "t 1" }, wantReason: ReasonInvalidTurnID, wantField: "turn_id"},
		{name: "turn id too long", mutate: func(r *TurnRequest) { r.TurnID = strings.Repeat("t", 129) }, wantReason: ReasonInvalidTurnID, wantField: "turn_id"},
		{name: "no input", mutate: func(r *TurnRequest) { r.Input = nil }, wantReason: ReasonMissingInput, wantField: "input"},
		{name: "only system input", mutate: func(r *TurnRequest) { r.Input = r.Input[:1] }, wantReason: ReasonMissingInput, wantField: "input"},
		{name: "too many messages", lim: Limits{MaxInputMessages: 1}, wantReason: ReasonTooLarge, wantField: "input"},
		{name: "assistant input", mutate: func(r *TurnRequest) { r.Input[1].Role = RoleAssistant }, wantReason: ReasonInvalidRole, wantField: "input[1].role"},
		{name: "tool input", mutate: func(r *TurnRequest) { r.Input[0].Role = RoleTool }, wantReason: ReasonInvalidRole, wantField: "input[0].role"},
		{name: "empty role", mutate: func(r *TurnRequest) { r.Input[0].Role = "" }, wantReason: ReasonInvalidRole, wantField: "input[0].role"},
		{name: "content too large", lim: Limits{MaxContentBytes: 24}, wantReason: ReasonTooLarge, wantField: "input[1].content"},
		{name: "content invalid utf-8", mutate: func(r *TurnRequest) { r.Input[1].Content = "caf\xe9" }, wantReason: ReasonMalformed, wantField: "input[1].content"},
		{name: "system too large", mutate: func(r *TurnRequest) { r.System = strings.Repeat("x", 26) }, lim: Limits{MaxContentBytes: 25}, wantReason: ReasonTooLarge, wantField: "system"},
		{name: "system invalid utf-8", mutate: func(r *TurnRequest) { r.System = "\xff" }, wantReason: ReasonMalformed, wantField: "system"},
		{name: "route with dot", mutate: func(r *TurnRequest) { r.Route = "a.b" }, wantReason: ReasonUnknownRoute, wantField: "route"},
		{name: "too many tools", lim: Limits{MaxTools: 1}, wantReason: ReasonTooLarge, wantField: "tools"},
		{name: "empty tool name", mutate: func(r *TurnRequest) { r.Tools[1].Name = "" }, wantReason: ReasonInvalidTool, wantField: "tools[1].name"},
		{name: "tool name too long", mutate: func(r *TurnRequest) { r.Tools[0].Name = strings.Repeat("x", 65) }, wantReason: ReasonInvalidTool, wantField: "tools[0].name"},
		{name: "tool name with dot", mutate: func(r *TurnRequest) { r.Tools[0].Name = "fs.read" }, wantReason: ReasonInvalidTool, wantField: "tools[0].name"},
		{name: "duplicate tool", mutate: func(r *TurnRequest) { r.Tools[1].Name = "get_time" }, wantReason: ReasonInvalidTool, wantField: "tools[1].name"},
		{name: "tool description too large", mutate: func(r *TurnRequest) { r.Tools[1].Description = strings.Repeat("d", 26) }, lim: Limits{MaxContentBytes: 25}, wantReason: ReasonTooLarge, wantField: "tools[1].description"},
		{name: "tool description invalid utf-8", mutate: func(r *TurnRequest) { r.Tools[0].Description = "\xc3" }, wantReason: ReasonMalformed, wantField: "tools[0].description"},
		{name: "parameters not JSON", mutate: func(r *TurnRequest) { r.Tools[0].Parameters["default"] = math.NaN() }, wantReason: ReasonInvalidTool, wantField: "tools[0].parameters"},
		{name: "parameters too large", lim: Limits{MaxToolSchemaBytes: 50}, wantReason: ReasonTooLarge, wantField: "tools[0].parameters"},
		{name: "parameters array type", mutate: func(r *TurnRequest) { r.Tools[0].Parameters["type"] = "array" }, wantReason: ReasonInvalidTool, wantField: "tools[0].parameters"},
		{name: "parameters type list", mutate: func(r *TurnRequest) { r.Tools[0].Parameters["type"] = []any{"object"} }, wantReason: ReasonInvalidTool, wantField: "tools[0].parameters"},
		{name: "parameters key invalid utf-8", mutate: func(r *TurnRequest) {
			r.Tools[0].Parameters["properties"].(map[string]any)["\xff"] = map[string]any{}
		}, wantReason: ReasonMalformed, wantField: "tools[0].parameters.properties"},
		{name: "parameters string invalid utf-8", mutate: func(r *TurnRequest) { r.Tools[0].Parameters["description"] = "caf\xe9" }, wantReason: ReasonMalformed, wantField: "tools[0].parameters.description"},
		{name: "parameters 65 levels deep", mutate: func(r *TurnRequest) {
			var v any = map[string]any{}
			for range 64 {
				v = map[string]any{"p": v}
			}
			r.Tools[1].Parameters = v.(map[string]any)
		}, wantReason: ReasonTooLarge, wantField: shortPath("tools[1].parameters.p" + strings.Repeat(".p", 63))},
		{name: "parameters too many values", lim: Limits{MaxElements: 2}, wantReason: ReasonTooLarge, wantField: "tools[0].parameters"},
		{name: "negative iterations", mutate: func(r *TurnRequest) { r.Budgets.MaxIterations = -1 }, wantReason: ReasonInvalidBudgets, wantField: "budgets.max_iterations"},
		{name: "negative tool calls", mutate: func(r *TurnRequest) { r.Budgets.MaxToolCalls = -1 }, wantReason: ReasonInvalidBudgets, wantField: "budgets.max_tool_calls"},
		{name: "negative repeated failures", mutate: func(r *TurnRequest) { r.Budgets.MaxRepeatedToolFailures = -2 }, wantReason: ReasonInvalidBudgets, wantField: "budgets.max_repeated_tool_failures"},
		{name: "negative wall clock", mutate: func(r *TurnRequest) { r.Budgets.WallClockMS = -1 }, wantReason: ReasonInvalidBudgets, wantField: "budgets.wall_clock_ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := validRequest()
			if tt.mutate != nil {
				tt.mutate(r)
			}
			subject := tt.subject
			if subject == "" {
				subject = "s1"
			}
			err := r.Validate(subject, tt.lim)
			checkValidation(t, fmt.Sprintf("TurnRequest.Validate(%q, %+v)", subject, tt.lim), err, tt.wantReason, tt.wantField)
		})
	}
}

// checkValidation compares a Validate result with the wanted reason and
// field ("" reason: no error).
func checkValidation(t *testing.T, call string, err error, wantReason, wantField string) {
	t.Helper()
	if wantReason == "" {
		if err != nil {
			t.Errorf("%s = %v; want nil", call, err)
		}
		return
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("%s = %v; want a *ValidationError with reason %s", call, err, wantReason)
	}
	if ve.Reason != wantReason || ve.Field != wantField {
		t.Errorf("%s = %v (reason %q, field %q); want reason %q, field %q", call, err, ve.Reason, ve.Field, wantReason, wantField)
	}
	if got := RejectReason(fmt.Errorf("wrapped: %w", err)); got != wantReason {
		t.Errorf("RejectReason(wrapped %v) = %q; want %q", err, got, wantReason)
	}
	if ve.Detail == "" || !strings.HasPrefix(err.Error(), "wire: "+wantReason+": "+wantField) {
		t.Errorf("%s error text = %q; want \"wire: %s: %s: <detail>\"", call, err.Error(), wantReason, wantField)
	}
}

func TestToolResultValidate(t *testing.T) {
	valid := func() ToolResult {
		return ToolResult{SessionID: "s1", TurnID: "t1", CallID: "call_1", Token: "tok_1-A", Content: "16:09"}
	}
	tests := []struct {
		name       string
		mutate     func(r *ToolResult)
		wantReason string
		wantField  string
	}{
		{name: "valid"},
		{name: "valid error with empty content", mutate: func(r *ToolResult) { r.Content, r.IsError = "", true }},
		// The awaiting worker verifies the token, and records a bad one.
		{name: "valid without a token", mutate: func(r *ToolResult) { r.Token = "" }},
		{name: "valid with any token", mutate: func(r *ToolResult) { r.Token = "not a token." }},
		{name: "valid call id of 128 any characters", mutate: func(r *ToolResult) { r.CallID = "call." + strings.Repeat("é", 61) + "x" }},
		{name: "bad session", mutate: func(r *ToolResult) { r.SessionID = "s 1" }, wantReason: ReasonInvalidToolResult, wantField: "session_id"},
		{name: "empty session", mutate: func(r *ToolResult) { r.SessionID = "" }, wantReason: ReasonInvalidToolResult, wantField: "session_id"},
		{name: "bad turn", mutate: func(r *ToolResult) { r.TurnID = "t>" }, wantReason: ReasonInvalidToolResult, wantField: "turn_id"},
		{name: "empty call id", mutate: func(r *ToolResult) { r.CallID = "" }, wantReason: ReasonInvalidToolResult, wantField: "call_id"},
		{name: "call id too long", mutate: func(r *ToolResult) { r.CallID = strings.Repeat("c", 129) }, wantReason: ReasonInvalidToolResult, wantField: "call_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := valid()
			if tt.mutate != nil {
				tt.mutate(&r)
			}
			checkValidation(t, fmt.Sprintf("ToolResult.Validate(%+v)", r), r.Validate(), tt.wantReason, tt.wantField)
		})
	}
}

func TestToolCallValidate(t *testing.T) {
	valid := func() ToolCall {
		return ToolCall{SessionID: "s1", TurnID: "t1", Step: 1, CallID: "call_1", Name: "get_time",
			Arguments: `{"city":"Paris"}`, Deadline: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), Token: "tok_1-A"}
	}
	tests := []struct {
		name       string
		mutate     func(c *ToolCall)
		wantReason string
		wantField  string
	}{
		{name: "valid"},
		{name: "valid empty object", mutate: func(c *ToolCall) { c.Arguments = "{}" }},
		{name: "valid arguments with space", mutate: func(c *ToolCall) { c.Arguments = " {\"a\": [1, 2]} \n" }},
		{name: "bad session", mutate: func(c *ToolCall) { c.SessionID = "a.b" }, wantReason: ReasonInvalidToolRequest, wantField: "session_id"},
		{name: "bad turn", mutate: func(c *ToolCall) { c.TurnID = "" }, wantReason: ReasonInvalidToolRequest, wantField: "turn_id"},
		{name: "empty call id", mutate: func(c *ToolCall) { c.CallID = "" }, wantReason: ReasonInvalidToolRequest, wantField: "call_id"},
		{name: "call id too long", mutate: func(c *ToolCall) { c.CallID = strings.Repeat("c", 129) }, wantReason: ReasonInvalidToolRequest, wantField: "call_id"},
		{name: "empty name", mutate: func(c *ToolCall) { c.Name = "" }, wantReason: ReasonInvalidToolRequest, wantField: "name"},
		{name: "name too long", mutate: func(c *ToolCall) { c.Name = strings.Repeat("n", 65) }, wantReason: ReasonInvalidToolRequest, wantField: "name"},
		{name: "name with wildcard", mutate: func(c *ToolCall) { c.Name = ">" }, wantReason: ReasonInvalidToolRequest, wantField: "name"},
		{name: "empty arguments", mutate: func(c *ToolCall) { c.Arguments = "" }, wantReason: ReasonInvalidToolRequest, wantField: "arguments"},
		{name: "truncated arguments", mutate: func(c *ToolCall) { c.Arguments = `{"city":"Par` }, wantReason: ReasonInvalidToolRequest, wantField: "arguments"},
		{name: "no token", mutate: func(c *ToolCall) { c.Token = "" }, wantReason: ReasonInvalidToolRequest, wantField: "token"},
		{name: "token with a dot", mutate: func(c *ToolCall) { c.Token = "a.b" }, wantReason: ReasonInvalidToolRequest, wantField: "token"},
		{name: "token too long", mutate: func(c *ToolCall) { c.Token = strings.Repeat("t", 129) }, wantReason: ReasonInvalidToolRequest, wantField: "token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			if tt.mutate != nil {
				tt.mutate(&c)
			}
			checkValidation(t, fmt.Sprintf("ToolCall.Validate(%+v)", c), c.Validate(), tt.wantReason, tt.wantField)
		})
	}
}

func TestRejectReason(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"validation error", invalid(ReasonTooLarge, "input", "too many"), ReasonTooLarge},
		{"wrapped twice", fmt.Errorf("a: %w", fmt.Errorf("b: %w", invalid(ReasonUnknownRoute, "route", "x"))), ReasonUnknownRoute},
		{"decode error", &json.SyntaxError{}, ReasonMalformed},
		{"plain error", errors.New("boom"), ReasonMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RejectReason(tt.err); got != tt.want {
				t.Errorf("RejectReason(%v) = %q; want %q", tt.err, got, tt.want)
			}
		})
	}
}

func TestValidationErrorText(t *testing.T) {
	tests := []struct {
		err  *ValidationError
		want string
	}{
		{&ValidationError{Reason: ReasonInvalidRole, Field: "input[0].role", Detail: "must be user or system"}, "wire: invalid_role: input[0].role: must be user or system"},
		{&ValidationError{Reason: ReasonDuplicateTurn, Detail: "turn t1 already ran"}, "wire: duplicate_turn: turn t1 already ran"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("(%#v).Error() = %q; want %q", tt.err, got, tt.want)
		}
	}
}

func TestValidTokenAndToolName(t *testing.T) {
	tests := []struct {
		in        string
		wantToken bool
		wantTool  bool
	}{
		{"s1", true, true},
		{"A-z_09", true, true},
		{"", false, false},
		{strings.Repeat("a", 64), true, true},
		{strings.Repeat("a", 65), true, false},
		{strings.Repeat("a", 128), true, false},
		{strings.Repeat("a", 129), false, false},
		{"a.b", false, false},
		{"a b", false, false},
		{"*", false, false},
		{">", false, false},
		{"é", false, false},
		{"a\n", false, false},
	}
	for _, tt := range tests {
		if got := ValidToken(tt.in); got != tt.wantToken {
			t.Errorf("ValidToken(%q) = %v; want %v", tt.in, got, tt.wantToken)
		}
		if got := ValidToolName(tt.in); got != tt.wantTool {
			t.Errorf("ValidToolName(%q) = %v; want %v", tt.in, got, tt.wantTool)
		}
	}
}

func TestCodecFor(t *testing.T) {
	tests := []struct {
		in      string
		want    Codec
		wantErr bool
	}{
		{"", JSON, false},
		{"application/json", JSON, false},
		{"application/json; charset=utf-8", JSON, false},
		{"application/json;charset=UTF-8", JSON, false},
		{"Application/JSON", JSON, false},
		{" application/json ", JSON, false},
		{"text/json", JSON, false},
		{"application/msgpack", Msgpack, false},
		{"application/msgpack; charset=binary", Msgpack, false},
		{"application/x-msgpack", Msgpack, false},
		{"application/vnd.msgpack", Msgpack, false},
		{"APPLICATION/X-MSGPACK", Msgpack, false},
		{"text/plain", nil, true},
		{"application/xml", nil, true},
		{"application/cbor", nil, true},
		{"application/json+msgpack", nil, true},
		{"json", nil, true},
		{"application/json; charset", nil, true},
		{"/", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := CodecFor(tt.in)
			if tt.wantErr {
				if err == nil || !strings.HasPrefix(err.Error(), "wire: ") {
					t.Errorf("CodecFor(%q) = %v, %v; want a \"wire: \" error", tt.in, got, err)
				}
				if got != nil {
					t.Errorf("CodecFor(%q) codec = %v; want nil with the error", tt.in, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("CodecFor(%q) = %v, %v; want %v, nil", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestCodecContentType(t *testing.T) {
	for _, c := range []Codec{JSON, Msgpack} {
		got, err := CodecFor(c.ContentType())
		if err != nil || got != c {
			t.Errorf("CodecFor(%q) = %v, %v; want %v", c.ContentType(), got, err, c)
		}
	}
	if got := JSON.ContentType(); got != ContentTypeJSON {
		t.Errorf("JSON.ContentType() = %q; want %q", got, ContentTypeJSON)
	}
	if got := Msgpack.ContentType(); got != ContentTypeMsgpack {
		t.Errorf("Msgpack.ContentType() = %q; want %q", got, ContentTypeMsgpack)
	}
}

func TestJSONUnmarshalStrict(t *testing.T) {
	const ok = `{"session_id":"s1","turn_id":"t1","input":[{"role":"user","content":"hi"}]}`
	tests := []struct {
		name    string
		in      string
		wantErr bool
	}{
		{"valid", ok, false},
		{"trailing white space", ok + " \n\t\r\n", false},
		{"leading white space", "\n " + ok, false},
		{"unknown field", `{"session_id":"s1","sesion_id":"s1","input":[]}`, true},
		{"unknown nested field", `{"session_id":"s1","input":[{"role":"user","content":"hi","author":"me"}]}`, true},
		{"unknown budget", `{"session_id":"s1","input":[],"budgets":{"max_tokens":1}}`, true},
		{"second value", ok + ok, true},
		{"trailing word", ok + " x", true},
		{"trailing brace", ok + "}", true},
		{"trailing bracket", ok + "]", true},
		{"trailing comma", ok + ",", true},
		{"trailing nul", ok + "\x00", true},
		{"trailing non-breaking space", ok + "\u00a0", true},
		{"empty", "", true},
		{"truncated", ok[:len(ok)-1], true},
		{"array", `[1]`, true},
		{"wrong type", `{"session_id":1,"input":[]}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r TurnRequest
			err := JSON.UnmarshalStrict([]byte(tt.in), &r)
			if (err != nil) != tt.wantErr {
				t.Errorf("JSON.UnmarshalStrict(%q) = %v; want error %v", tt.in, err, tt.wantErr)
			}
		})
	}
}

func TestMsgpackUnmarshalStrict(t *testing.T) {
	enc := func(v any) []byte {
		t.Helper()
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ok := enc(map[string]any{"session_id": "s1", "turn_id": "t1", "input": []any{map[string]any{"role": "user", "content": "hi"}}})
	tests := []struct {
		name    string
		in      []byte
		wantErr bool
	}{
		{"valid", ok, false},
		{"unknown field", enc(map[string]any{"session_id": "s1", "sesion_id": "s1"}), true},
		{"unknown nested field", enc(map[string]any{"input": []any{map[string]any{"role": "user", "author": "me"}}}), true},
		{"trailing byte", append(bytes.Clone(ok), 0xc0), true},
		{"second value", append(bytes.Clone(ok), ok...), true},
		{"truncated", ok[:len(ok)-1], true},
		{"empty", nil, true},
		{"wrong type", enc(map[string]any{"session_id": 1}), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r TurnRequest
			err := Msgpack.UnmarshalStrict(tt.in, &r)
			if (err != nil) != tt.wantErr {
				t.Errorf("Msgpack.UnmarshalStrict(%x) = %v; want error %v", tt.in, err, tt.wantErr)
			}
		})
	}
}

// TestMsgpackNestedMaps checks that maps inside `any` values (tool
// parameter schemas, event payloads) decode as map[string]any, the shape JSON
// decoding gives.
func TestMsgpackNestedMaps(t *testing.T) {
	in := validRequest()
	in.Tools[0].Parameters["items"] = []any{map[string]any{"deep": map[string]any{"x": true}}}
	b, err := Msgpack.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out TurnRequest
	if err := Msgpack.Unmarshal(b, &out); err != nil {
		t.Fatalf("Msgpack.Unmarshal = %v", err)
	}
	props, ok := out.Tools[0].Parameters["properties"].(map[string]any)
	if !ok {
		t.Fatalf("Parameters[properties] = %T; want map[string]any", out.Tools[0].Parameters["properties"])
	}
	if _, ok := props["city"].(map[string]any); !ok {
		t.Errorf("Parameters[properties][city] = %T; want map[string]any", props["city"])
	}
	items := out.Tools[0].Parameters["items"].([]any)
	deep, ok := items[0].(map[string]any)["deep"].(map[string]any)
	if !ok || deep["x"] != true {
		t.Errorf("Parameters[items][0][deep] = %#v; want map[string]any{x: true}", items[0])
	}
}

func TestChunkJSONGolden(t *testing.T) {
	tests := []struct {
		name  string
		chunk Chunk
		want  string
	}{
		{
			name: "frame with delta",
			chunk: Chunk{SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 2, Seq: 3, Provider: "openai", Model: "gpt-4o",
				Delta: &Delta{Text: "a<b"}},
			want: `{"session_id":"s1","turn_id":"t1","step":1,"attempt":2,"seq":3,"provider":"openai","model":"gpt-4o",` +
				`"delta":{"text":"a<b"}}`,
		},
		{
			name:  "frame without a delta (a done sentinel)",
			chunk: Chunk{SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 1, Seq: 9},
			want:  `{"session_id":"s1","turn_id":"t1","step":1,"attempt":1,"seq":9}`,
		},
		{
			name:  "failed marker",
			chunk: Chunk{SessionID: "s1", TurnID: "t1", Step: 2, Attempt: 3, Seq: 1, Marker: MarkerFailed, Failure: "timeout"},
			want:  `{"session_id":"s1","turn_id":"t1","step":2,"attempt":3,"seq":1,"marker":"failed","failure":"timeout"}`,
		},
		{
			name: "every delta field",
			chunk: Chunk{SessionID: "s", TurnID: "t", Event: "message", Delta: &Delta{
				Text:         "x",
				ToolCalls:    []ToolCallDelta{{Index: 0, Start: true, Name: "f", Arguments: `{"a"`}, {Index: 1, Arguments: ":1}", End: true}},
				Usage:        &Usage{InputTokens: 5, CachedInputTokens: 1, OutputTokens: 2, ReasoningTokens: 1},
				FinishReason: FinishLength, RawFinishReason: "max_tokens",
			}},
			want: `{"session_id":"s","turn_id":"t","step":0,"attempt":0,"seq":0,"event":"message","delta":{"text":"x",` +
				`"tool_calls":[{"index":0,"start":true,"name":"f","arguments":"{\"a\""},{"index":1,"arguments":":1}","end":true}],` +
				`"usage":{"input_tokens":5,"cached_input_tokens":1,"output_tokens":2,"reasoning_tokens":1},` +
				`"finish_reason":"length","raw_finish_reason":"max_tokens"}}`,
		},
		{
			name:  "empty delta omitted",
			chunk: Chunk{SessionID: "s", TurnID: "t", Delta: &Delta{}},
			want:  `{"session_id":"s","turn_id":"t","step":0,"attempt":0,"seq":0}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(tt.chunk.AppendJSON(nil)); got != tt.want {
				t.Errorf("AppendJSON(%+v) = %s; want %s", tt.chunk, got, tt.want)
			}
			if got := string(tt.chunk.AppendJSON([]byte("prefix"))); got != "prefix"+tt.want {
				t.Errorf("AppendJSON(prefix) = %s; want prefix%s", got, tt.want)
			}
			for _, v := range []any{&tt.chunk, tt.chunk} {
				got, err := JSON.Marshal(v)
				if err != nil || string(got) != tt.want {
					t.Errorf("JSON.Marshal(%T) = %s, %v; want %s", v, got, err, tt.want)
				}
			}
			got, err := tt.chunk.MarshalJSON()
			if err != nil || string(got) != tt.want {
				t.Errorf("MarshalJSON() = %s, %v; want %s", got, err, tt.want)
			}
			if !json.Valid(got) {
				t.Errorf("MarshalJSON() = %s; not valid JSON", got)
			}
		})
	}
}

// TestChunkOldRaw: a chunk of an older writer, which carried the
// provider's bytes as "raw" or "raw_text", reads as the chunk without them
// (readers ignore fields they do not know); the strict decoder refuses the
// field, as the schema does.
func TestChunkOldRaw(t *testing.T) {
	want := Chunk{SessionID: "s", TurnID: "t", Step: 1, Attempt: 1, Seq: 1, Delta: &Delta{Text: "x"}}
	for _, in := range []string{
		`{"session_id":"s","turn_id":"t","step":1,"attempt":1,"seq":1,"raw":{"choices":[{"delta":{"content":"x"}}]},"delta":{"text":"x"}}`,
		`{"session_id":"s","turn_id":"t","step":1,"attempt":1,"seq":1,"raw_text":"[DONE]","delta":{"text":"x"}}`,
	} {
		var got Chunk
		if err := JSON.Unmarshal([]byte(in), &got); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("JSON.Unmarshal(%s) = %+v, %v; want %+v", in, got, err, want)
		}
		var strict Chunk
		if err := JSON.UnmarshalStrict([]byte(in), &strict); RejectReason(err) != ReasonUnknownField {
			t.Errorf("JSON.UnmarshalStrict(%s) = %v; want an unknown field error", in, err)
		}
	}
	// An older msgpack writer carried the frame as the "raw" binary.
	mb, err := msgpack.Marshal(map[string]any{"session_id": "s", "turn_id": "t", "step": 1, "attempt": 1, "seq": 1,
		"raw": []byte("[DONE]"), "delta": map[string]any{"text": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	var mgot Chunk
	if err := Msgpack.Unmarshal(mb, &mgot); err != nil || !reflect.DeepEqual(mgot, want) {
		t.Errorf("Msgpack.Unmarshal(older chunk with raw) = %+v, %v; want %+v", mgot, err, want)
	}
	var mstrict Chunk
	if err := Msgpack.UnmarshalStrict(mb, &mstrict); RejectReason(err) != ReasonUnknownField {
		t.Errorf("Msgpack.UnmarshalStrict(older chunk with raw) = %v; want an unknown field error", err)
	}
}

func TestChunkRoundTrip(t *testing.T) {
	chunks := []Chunk{
		{SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 1, Seq: 1, Provider: "p", Model: "m", Event: "e",
			Delta: &Delta{Text: "hé\"llo\n", ToolCalls: []ToolCallDelta{{Index: 2, Start: true, Name: "n", Arguments: "{", End: true}},
				Usage: &Usage{InputTokens: 1, OutputTokens: 2}, FinishReason: FinishStop, RawFinishReason: "end_turn"}},
		{SessionID: "s1", TurnID: "t1", Step: 3, Attempt: 4, Seq: 5},
		{SessionID: "s1", TurnID: "t1", Step: 3, Attempt: 4, Seq: 6, Marker: MarkerRetrying, Failure: "rate_limit"},
		{SessionID: "s1", TurnID: "t1"},
	}
	for _, in := range chunks {
		for _, codec := range []Codec{JSON, Msgpack} {
			b, err := codec.Marshal(&in)
			if err != nil {
				t.Fatalf("%s.Marshal(%+v) = %v", codec.ContentType(), in, err)
			}
			var out Chunk
			if err := codec.Unmarshal(b, &out); err != nil {
				t.Fatalf("%s.Unmarshal(%q) = %v", codec.ContentType(), b, err)
			}
			if !reflect.DeepEqual(out, in) {
				t.Errorf("%s round trip of %+v = %+v; want it unchanged", codec.ContentType(), in, out)
			}
		}
	}
	// A chunk value (not a pointer) encodes the same way.
	mb, err := Msgpack.Marshal(chunks[0])
	if err != nil {
		t.Fatalf("Msgpack.Marshal(Chunk value) = %v", err)
	}
	var out Chunk
	if err := Msgpack.Unmarshal(mb, &out); err != nil || !reflect.DeepEqual(out, chunks[0]) {
		t.Errorf("msgpack round trip of a Chunk value = %+v, %v; want %+v", out, err, chunks[0])
	}
}

// TestUnmarshalLenient checks that Unmarshal, the readers' decoder, keeps
// the fields it knows and ignores the ones a newer writer may add, with
// either codec and through Decode.
func TestUnmarshalLenient(t *testing.T) {
	doc := map[string]any{
		"session_id": "s1", "turn_id": "t1", "step": 2, "seq": 7, "role": "assistant", "content": "hi",
		"time": "2025-03-14T15:09:26Z", "added_later": map[string]any{"x": []any{1}},
		"usage": map[string]any{"input_tokens": 3, "output_tokens": 4, "new_bucket": 5},
	}
	jb, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	doc["time"] = time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC) // msgpack carries a timestamp
	mb, err := msgpack.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := Message{SessionID: "s1", TurnID: "t1", Step: 2, Seq: 7, Role: RoleAssistant, Content: "hi",
		Time: time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC), Usage: &Usage{InputTokens: 3, OutputTokens: 4}}
	tests := []struct {
		name   string
		decode func(v any) error
	}{
		{"JSON.Unmarshal", func(v any) error { return JSON.Unmarshal(jb, v) }},
		{"Msgpack.Unmarshal", func(v any) error { return Msgpack.Unmarshal(mb, v) }},
		{"Decode json", func(v any) error { return Decode("", jb, v) }},
		{"Decode msgpack", func(v any) error { return Decode("application/msgpack", mb, v) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Message
			if err := tt.decode(&got); err != nil {
				t.Fatalf("%s(message with unknown fields) = %v; want nil", tt.name, err)
			}
			if !got.Time.Equal(want.Time) {
				t.Errorf("%s(...).Time = %v; want %v", tt.name, got.Time, want.Time)
			}
			got.Time = want.Time
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s(...) = %+v; want %+v", tt.name, got, want)
			}
		})
	}
	// The strict decoders reject the same documents.
	var m Message
	if err := JSON.UnmarshalStrict(jb, &m); err == nil {
		t.Errorf("JSON.UnmarshalStrict(%s) = nil; want an unknown field error", jb)
	}
	if err := Msgpack.UnmarshalStrict(mb, &m); err == nil {
		t.Errorf("Msgpack.UnmarshalStrict(%x) = nil; want an unknown field error", mb)
	}
	if err := Decode("text/plain", jb, &m); err == nil {
		t.Errorf("Decode(text/plain) = nil; want an unsupported content type error")
	}
}

func TestChunkUnmarshal(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Chunk
		wantErr bool
	}{
		{name: "unknown fields ignored", in: `{"session_id":"s","turn_id":"t","step":1,"attempt":1,"seq":2,"later":1,"delta":{"text":"x","later":[]}}`,
			want: Chunk{SessionID: "s", TurnID: "t", Step: 1, Attempt: 1, Seq: 2, Delta: &Delta{Text: "x"}}},
		{name: "empty delta dropped", in: `{"session_id":"s","turn_id":"t","step":0,"attempt":0,"seq":0,"delta":{}}`,
			want: Chunk{SessionID: "s", TurnID: "t"}},
		{name: "an older writer's raw_text ignored", in: `{"session_id":"s","turn_id":"t","step":0,"attempt":0,"seq":0,"raw_text":"[DONE]"}`,
			want: Chunk{SessionID: "s", TurnID: "t"}},
		{name: "trailing data", in: `{"session_id":"s","turn_id":"t","step":0,"attempt":0,"seq":0}}`, wantErr: true},
		{name: "wrong type", in: `{"session_id":"s","turn_id":"t","step":"1","attempt":0,"seq":0}`, wantErr: true},
		{name: "not an object", in: `"chunk"`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Chunk
			err := JSON.Unmarshal([]byte(tt.in), &got)
			if tt.wantErr {
				if err == nil {
					t.Errorf("JSON.Unmarshal(%s) = nil; want an error", tt.in)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("JSON.Unmarshal(%s) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
		})
	}
}

// TestAppendString compares appendString with encoding/json (HTML escaping
// off, which appendString never does) for many strings.
func TestAppendString(t *testing.T) {
	inputs := []string{
		"", "plain", `"quoted"`, `back\slash`, "<script>&amp;</script>",
		"tab\there", "new\nline", "cr\rlf\n", "\b\f", "\x00", "\x7f", "del\x7fete",
		"\u2028", "\u2029", "a\u2028b\u2029c", "\u2027\u202a",
		"héllo", "日本語", "emoji 🦜 flag 🇫🇷", "\ufffd", "\ufeffbom",
		"\xff", "\xfe\xff", "a\xffb", "\xe2\x80", "\xe2\x80\xa8", "\xe2\x80\xa8\xe2", "\xed\xa0\x80",
		"\xf4\x90\x80\x80", "\xc0\xaf", "\xf0\x9f\xa6", "caf\xe9", strings.Repeat("x", 1000) + "\x01",
	}
	for b := 0; b < 256; b++ {
		inputs = append(inputs, string([]byte{byte(b)}), "a"+string([]byte{byte(b)})+"z")
	}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "\"", "\\", "\n", "\x00", "\x1f", "é", "\u2028", "\xff", "\xe2", "\x80", "<", "🦜", " "}
	for range 2000 {
		var sb strings.Builder
		for range r.IntN(12) {
			sb.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		inputs = append(inputs, sb.String())
	}
	for _, s := range inputs {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		wantStr := strings.TrimSuffix(want.String(), "\n")
		if got := string(appendString(nil, s)); got != wantStr {
			t.Errorf("appendString(%q) = %s; want %s", s, got, wantStr)
		}
	}
}

func TestSubjects(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"Submit", Subjects{}.Submit("s1"), "turn.submit.s1"},
		{"Cancel", Subjects{}.Cancel("s1"), "turn.cancel.s1"},
		{"Chunk", Subjects{}.Chunk("s1", "t1"), "turn.chunk.s1.t1"},
		{"Raw", Subjects{}.Raw("s1", "t1"), "turn.raw.s1.t1"},
		{"Message", Subjects{}.Message("s1"), "turn.message.s1"},
		{"Event", Subjects{}.Event("s1"), "turn.event.s1"},
		{"Tool", Subjects{}.Tool("get_time"), "turn.tool.get_time"},
		{"Result", Subjects{}.Result("s1"), "turn.result.s1"},
		{"Dead", Subjects{}.Dead("s1"), "turn.dead.s1"},
		{"All submit", Subjects{}.All("submit"), "turn.submit.>"},
		{"All chunk", Subjects{}.All("chunk"), "turn.chunk.>"},
		{"prefix Submit", Subjects{Prefix: "acme"}.Submit("s1"), "acme.submit.s1"},
		{"prefix Chunk", Subjects{Prefix: "acme"}.Chunk("s1", "t1"), "acme.chunk.s1.t1"},
		{"dotted prefix Raw", Subjects{Prefix: "acme.turn"}.Raw("s1", "t1"), "acme.turn.raw.s1.t1"},
		{"All raw", Subjects{}.All("raw"), "turn.raw.>"},
		{"dotted prefix Event", Subjects{Prefix: "acme.turn"}.Event("s1"), "acme.turn.event.s1"},
		{"prefix All", Subjects{Prefix: "acme"}.All("event"), "acme.event.>"},
		{"explicit default prefix", Subjects{Prefix: DefaultPrefix}.Tool("x"), "turn.tool.x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("%s = %q; want %q", tt.name, tt.got, tt.want)
			}
		})
	}
}

func TestSessionOf(t *testing.T) {
	def := Subjects{}
	acme := Subjects{Prefix: "acme.turn"}
	tests := []struct {
		s    Subjects
		in   string
		want string
	}{
		{def, def.Submit("s1"), "s1"},
		{def, def.Cancel("s1"), "s1"},
		{def, def.Chunk("s1", "t1"), "s1"},
		{def, def.Raw("s6", "t1"), "s6"},
		{def, def.Message("s-2"), "s-2"},
		{def, def.Event("S_3"), "S_3"},
		{def, def.Result("s4"), "s4"},
		{def, def.Dead("s5"), "s5"},
		{acme, acme.Submit("s1"), "s1"},
		{acme, acme.Chunk("s1", "t1"), "s1"},
		{acme, acme.Raw("s1", "t1"), "s1"},
		{def, def.Tool("get_time"), ""},
		{def, "turn.unknown.s1", ""},
		{def, "turn.submit", ""},
		{def, "turn.submit.", ""},
		{def, "turn", ""},
		{def, "turn.", ""},
		{def, "", ""},
		{def, "turnx.submit.s1", ""},
		{def, "other.submit.s1", ""},
		{def, acme.Submit("s1"), ""},
		{acme, def.Submit("s1"), ""},
		{acme, "acme.submit.s1", ""},
	}
	for _, tt := range tests {
		if got := tt.s.SessionOf(tt.in); got != tt.want {
			t.Errorf("Subjects{%q}.SessionOf(%q) = %q; want %q", tt.s.Prefix, tt.in, got, tt.want)
		}
	}
}

func TestDeltaEmpty(t *testing.T) {
	tests := []struct {
		d    *Delta
		want bool
	}{
		{nil, true},
		{&Delta{}, true},
		{&Delta{Text: "x"}, false},
		{&Delta{ToolCalls: []ToolCallDelta{{}}}, false},
		{&Delta{Usage: &Usage{}}, false},
		{&Delta{FinishReason: FinishStop}, false},
	}
	for _, tt := range tests {
		if got := tt.d.Empty(); got != tt.want {
			t.Errorf("(%+v).Empty() = %v; want %v", tt.d, got, tt.want)
		}
	}
}

func TestUsageAdd(t *testing.T) {
	u := Usage{InputTokens: 1, CachedInputTokens: 2, OutputTokens: 3, ReasoningTokens: 4}
	u.Add(Usage{InputTokens: 10, CachedInputTokens: 20, OutputTokens: 30, ReasoningTokens: 40})
	if want := (Usage{InputTokens: 11, CachedInputTokens: 22, OutputTokens: 33, ReasoningTokens: 44}); u != want {
		t.Errorf("Usage.Add = %+v; want %+v", u, want)
	}
	huge := Usage{InputTokens: math.MaxInt64, OutputTokens: math.MaxInt64 - 1}
	huge.Add(Usage{InputTokens: math.MaxInt64, OutputTokens: 5, ReasoningTokens: 1})
	if want := (Usage{InputTokens: math.MaxInt64, OutputTokens: math.MaxInt64, ReasoningTokens: 1}); huge != want {
		t.Errorf("Usage.Add of huge counts = %+v; want %+v (saturated)", huge, want)
	}
}

func TestSessionEventTerminal(t *testing.T) {
	for typ, want := range map[string]bool{
		EventTurnCompleted: true, EventTurnFailed: true, EventTurnRejected: true,
		EventTurnAccepted: false, EventLLMFinish: false, EventToolResult: false, "": false,
	} {
		if got := (SessionEvent{Type: typ}).Terminal(); got != want {
			t.Errorf("SessionEvent{Type: %q}.Terminal() = %v; want %v", typ, got, want)
		}
	}
}

// TestMsgpackLengthGuard feeds the msgpack codec headers that claim more
// elements or bytes than the message holds. msgpack v5.4.1 would allocate
// them at their declared size (ten bytes claiming 2^32 input messages ran a
// fuzz worker out of memory); the codec must reject them first.
func TestMsgpackLengthGuard(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
	}{
		{"array32 of 2^32-1 inputs", []byte("\x81\xa5input\xdd\xff\xff\xff\xff")},
		{"array32 of inputs (fuzz crasher)", []byte("\x83\xa5input\xdd\xdd\xdd\xdd\x91")},
		{"array16 longer than data", []byte("\x81\xa5input\xdc\xff\xff\x80")},
		{"fixarray longer than data", []byte("\x81\xa5input\x9f\x80\x80")},
		{"map32 longer than data", []byte("\xdf\xff\xff\xff\xff")},
		{"map16 longer than data", []byte("\xde\x00\x10\xa0\xa0")},
		{"nested arrays overclaim", []byte("\x81\xa5tools\x92\x9f\x9f")},
		{"str32 longer than data", []byte("\x81\xaasession_id\xdb\xff\xff\xff\xff")},
		{"bin32 longer than data", []byte("\x81\xa6system\xc6\x7f\xff\xff\xff")},
		{"ext32 longer than data", []byte("\x81\xa6system\xc9\x7f\xff\xff\xff\x01")},
		{"fixext16 truncated", []byte("\x81\xa6system\xd8\x01\x00")},
		{"float64 truncated", []byte("\x81\xa6system\xcb\x00")},
		{"never used code", []byte("\x81\xa6system\xc1")},
		{"truncated map", []byte("\x82\xa6system\xa0")},
		{"empty", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkMsgpack(tt.in); err == nil {
				t.Errorf("checkMsgpack(%x) = nil; want an error", tt.in)
			}
			var r TurnRequest
			if err := Msgpack.Unmarshal(tt.in, &r); err == nil {
				t.Errorf("Msgpack.Unmarshal(%x) = nil; want an error", tt.in)
			}
			if err := Msgpack.UnmarshalStrict(tt.in, &r); err == nil {
				t.Errorf("Msgpack.UnmarshalStrict(%x) = nil; want an error", tt.in)
			}
		})
	}
}

// TestMsgpackLengthGuardAccepts checks that the guard accepts every kind of
// msgpack value at every header size.
func TestMsgpackLengthGuardAccepts(t *testing.T) {
	many := func(n int) []any {
		s := make([]any, n)
		for i := range s {
			s[i] = i
		}
		return s
	}
	manyKeys := func(n int) map[string]any {
		m := make(map[string]any, n)
		for i := range n {
			m[fmt.Sprint("k", i)] = nil
		}
		return m
	}
	values := []any{
		nil, true, false, 0, 127, -1, -32, -33, 128, 255, 256, 65535, 65536, 1 << 32, -129, -32769, -1 << 40,
		uint64(math.MaxUint64), float32(1.5), 2.5, math.Inf(1),
		"", strings.Repeat("s", 31), strings.Repeat("s", 32), strings.Repeat("s", 256), strings.Repeat("s", 65536),
		[]byte{}, []byte("bin"), bytes.Repeat([]byte{1}, 256), bytes.Repeat([]byte{1}, 65536),
		time.Unix(1, 0), time.Unix(1<<40, 5), // fixext4, ext8 timestamps
		many(0), many(15), many(16), many(65536), manyKeys(15), manyKeys(16), manyKeys(65536),
		[]any{[]any{[]any{map[string]any{"a": []any{}}}}},
	}
	for i, v := range values {
		for _, compact := range []bool{true, false} {
			var buf bytes.Buffer
			enc := msgpack.NewEncoder(&buf)
			enc.UseCompactInts(compact)
			enc.UseCompactFloats(compact)
			if err := enc.Encode(v); err != nil {
				t.Fatal(err)
			}
			if err := checkMsgpack(buf.Bytes()); err != nil {
				t.Errorf("checkMsgpack(values[%d] %T, compact %v) = %v; want nil", i, v, compact, err)
			}
		}
	}
	// Every ext size header.
	for _, n := range []int{1, 2, 3, 4, 8, 16, 17, 256, 65536} {
		b := []byte{}
		switch {
		case n == 1 || n == 2 || n == 4 || n == 8 || n == 16:
			b = append(b, map[int]byte{1: 0xd4, 2: 0xd5, 4: 0xd6, 8: 0xd7, 16: 0xd8}[n], 7)
		case n < 256:
			b = append(b, 0xc7, byte(n), 7)
		case n < 65536:
			b = append(b, 0xc8, byte(n>>8), byte(n), 7)
		default:
			b = append(b, 0xc9, byte(n>>24), byte(n>>16), byte(n>>8), byte(n), 7)
		}
		b = append(b, make([]byte, n)...)
		if err := checkMsgpack(b); err != nil {
			t.Errorf("checkMsgpack(ext of %d bytes) = %v; want nil", n, err)
		}
		if err := checkMsgpack(b[:len(b)-1]); err == nil {
			t.Errorf("checkMsgpack(ext of %d bytes, truncated) = nil; want an error", n)
		}
	}
}

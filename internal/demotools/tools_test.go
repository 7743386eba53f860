package demotools

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

func call(name, args string) wire.ToolCall {
	return wire.ToolCall{
		SessionID: "s1", TurnID: "t1", CallID: "c1", Name: name, Arguments: args,
		Deadline: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC),
	}
}

func TestGetTime(t *testing.T) {
	fixed := time.Date(2025, time.January, 15, 12, 30, 45, 0, time.UTC)
	summer := time.Date(2025, time.July, 15, 12, 30, 45, 0, time.UTC)
	tests := []struct {
		name    string
		now     time.Time
		args    string
		want    string
		isError bool
	}{
		{"default zone", fixed, `{}`, "2025-01-15T12:30:45Z UTC", false},
		{"empty zone", fixed, `{"timezone":""}`, "2025-01-15T12:30:45Z UTC", false},
		{"null arguments", fixed, `null`, "2025-01-15T12:30:45Z UTC", false},
		{"UTC", fixed, `{"timezone":"UTC"}`, "2025-01-15T12:30:45Z UTC", false},
		{"Paris in winter", fixed, `{"timezone":"Europe/Paris"}`, "2025-01-15T13:30:45+01:00 Europe/Paris", false},
		{"Paris in summer", summer, `{"timezone":"Europe/Paris"}`, "2025-07-15T14:30:45+02:00 Europe/Paris", false},
		{"half-hour offset", fixed, `{"timezone":"Asia/Kolkata"}`, "2025-01-15T18:00:45+05:30 Asia/Kolkata", false},
		{"west of UTC", fixed, `{"timezone":"America/New_York"}`, "2025-01-15T07:30:45-05:00 America/New_York", false},
		{"extra arguments ignored", fixed, `{"timezone":"UTC","format":"x"}`, "2025-01-15T12:30:45Z UTC", false},
		{"unknown zone", fixed, `{"timezone":"Mars/Olympus_Mons"}`, `unknown time zone "Mars/Olympus_Mons"`, true},
		{"host zone refused", fixed, `{"timezone":"Local"}`, `unknown time zone "Local"`, true},
		{"path traversal", fixed, `{"timezone":"../../etc/passwd"}`, `unknown time zone "../../etc/passwd"`, true},
		{"overlong zone", fixed, `{"timezone":"` + strings.Repeat("a", 65) + `"}`, "unknown time zone: longer than 64 characters", true},
		{"wrong type", fixed, `{"timezone":5}`, "invalid arguments: ", true},
		{"not an object", fixed, `[1]`, "invalid arguments: ", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := handlers(func() time.Time { return tt.now })[GetTime]
			got, err := h(context.Background(), call(GetTime, tt.args))
			if err != nil {
				t.Fatalf("get_time(%s) error = %v; want nil (failures are error results)", tt.args, err)
			}
			want := toolworker.Result{Content: tt.want, IsError: tt.isError}
			if strings.HasSuffix(tt.want, ": ") { // the decoder's own words follow
				got.Content = got.Content[:min(len(got.Content), len(tt.want))]
			}
			if got != want {
				t.Errorf("get_time(%s) = %+v; want %+v", tt.args, got, want)
			}
		})
	}
}

func TestCalculate(t *testing.T) {
	tests := []struct {
		name string
		args string
		want toolworker.Result
	}{
		{"expression", `{"expression":"17 * 23"}`, toolworker.Result{Content: "391"}},
		{"division by zero", `{"expression":"1/0"}`, toolworker.Result{Content: "division by zero", IsError: true}},
		{"garbage", `{"expression":"rm -rf /"}`, toolworker.Result{Content: `unexpected 'r' at position 1`, IsError: true}},
		{"missing expression", `{}`, toolworker.Result{Content: `missing required argument "expression"`, IsError: true}},
		{"empty expression", `{"expression":""}`, toolworker.Result{Content: "empty expression", IsError: true}},
		{"wrong type", `{"expression":17}`, toolworker.Result{Content: "invalid arguments: ", IsError: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Handlers()[Calculate](context.Background(), call(Calculate, tt.args))
			if err != nil {
				t.Fatalf("calculate(%s) error = %v; want nil", tt.args, err)
			}
			if strings.HasSuffix(tt.want.Content, ": ") { // the decoder's own words follow
				got.Content = got.Content[:min(len(got.Content), len(tt.want.Content))]
			}
			if got != tt.want {
				t.Errorf("calculate(%s) = %+v; want %+v", tt.args, got, tt.want)
			}
		})
	}
}

// TestToolsAreOfferable checks the definitions pass the TurnRequest
// validation a worker applies, and that every tool has a handler.
func TestToolsAreOfferable(t *testing.T) {
	tools := Tools()
	req := wire.TurnRequest{
		SessionID: "s1", TurnID: "t1",
		Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "hi"}},
		Tools: tools,
	}
	if err := req.Validate("s1", wire.Limits{}); err != nil {
		t.Fatalf("TurnRequest{Tools: Tools()}.Validate() = %v; want nil", err)
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
		if _, err := json.Marshal(tool.Parameters); err != nil {
			t.Errorf("json.Marshal(%s parameters) = %v", tool.Name, err)
		}
	}
	var handled []string
	for name, h := range Handlers() {
		if h == nil {
			t.Errorf("Handlers()[%s] = nil", name)
		}
		handled = append(handled, name)
	}
	slices.Sort(names)
	slices.Sort(handled)
	if !slices.Equal(names, handled) {
		t.Errorf("tools %v; handlers %v; want the same names", names, handled)
	}
}

func TestToolsReturnsFreshValues(t *testing.T) {
	Tools()[0].Parameters["type"] = "changed"
	if got := Tools()[0].Parameters["type"]; got != "object" {
		t.Errorf("Tools()[0].Parameters[type] = %v after a caller's change; want object", got)
	}
}

func TestToolSchemas(t *testing.T) {
	want := map[string]string{
		GetTime:   `{"properties":{"timezone":{"default":"UTC","description":"IANA time zone, e.g. Europe/Paris","type":"string"}},"type":"object"}`,
		Calculate: `{"properties":{"expression":{"description":"arithmetic such as 17 * 23","examples":["17 * 23"],"type":"string"}},"required":["expression"],"type":"object"}`,
	}
	for _, tool := range Tools() {
		b, err := json.Marshal(tool.Parameters)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != want[tool.Name] {
			t.Errorf("%s parameters = %s; want %s", tool.Name, b, want[tool.Name])
		}
	}
}

func TestIdempotentToolsHaveHandlers(t *testing.T) {
	h := Handlers()
	names := Idempotent()
	if len(names) != len(h) {
		t.Errorf("Idempotent() = %v; want every demo tool (%d)", names, len(h))
	}
	for _, name := range names {
		if h[name] == nil {
			t.Errorf("Idempotent() names %q, which has no handler", name)
		}
	}
}

package openaichat

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestAdapterAgainstMock runs the adapter against internal/mockllm, the
// fake every other package uses, so both sides of that boundary agree.
func TestAdapterAgainstMock(t *testing.T) {
	frames := mockllm.NewStream("m").Text("Hello there").Finish("stop").Usage(5, 2).Frames()
	tests := []struct {
		name  string
		resp  *mockllm.Response
		idle  time.Duration
		class provider.Class // empty: success
		text  string
	}{
		{name: "plain", resp: &mockllm.Response{Frames: frames, Done: true}, text: "Hello there"},
		{name: "done without blank line", resp: &mockllm.Response{Frames: frames, Done: true, DoneWithoutBlankLine: true}, text: "Hello there"},
		{name: "no done", resp: &mockllm.Response{Frames: frames}, class: provider.ClassStreamClosed},
		{name: "disconnect", resp: &mockllm.Response{Frames: frames, Done: true, DisconnectAfter: 2}, class: provider.ClassTransport},
		{name: "stall", resp: &mockllm.Response{Frames: frames, Done: true, Stall: time.Minute}, idle: 100 * time.Millisecond, class: provider.ClassTimeout},
		{
			name:  "rate limited",
			resp:  mockllm.Error(http.StatusTooManyRequests, "rate_limit_exceeded", "slow down", http.Header{"Retry-After": {"1"}}),
			class: provider.ClassRateLimit,
		},
		{
			name:  "in-band error",
			resp:  &mockllm.Response{Frames: []mockllm.Frame{frames[0], {Data: `{"error":{"message":"overloaded","type":"server_error"}}`}}, Done: true},
			class: provider.ClassServer,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(mockllm.New(mockllm.Queue(tt.resp)))
			t.Cleanup(srv.Close)
			o := stream(t, newAdapter(t, srv.URL+"/v1", Options{IdleTimeout: tt.idle}), []byte(`{"model":"m","messages":[]}`))
			if tt.class != "" {
				if f := o.failure(); f == nil || f.Class != tt.class {
					t.Errorf("Stream() error = %v; want %s", o.err, tt.class)
				}
				return
			}
			if o.err != nil {
				t.Fatalf("Stream() error = %v; want nil", o.err)
			}
			if o.resp.Text != tt.text || o.resp.FinishReason != wire.FinishStop {
				t.Errorf("Stream() = %q %q; want %q stop", o.resp.Text, o.resp.FinishReason, tt.text)
			}
		})
	}
}

// TestAdapterMockDefaultRoundTrip: a prepared request with tools, through
// the mock's default script, comes back as complete tool calls, and the
// mock received exactly the prepared bytes.
func TestAdapterMockDefaultRoundTrip(t *testing.T) {
	mock := mockllm.New(mockllm.Default(mockllm.DefaultOptions{Split: 3}))
	srv := httptest.NewServer(mock)
	t.Cleanup(srv.Close)
	a := newAdapter(t, srv.URL+"/v1", Options{})
	req := &provider.Request{
		System:   "s",
		Messages: []provider.Message{{Role: wire.RoleUser, Content: "Combien font 12 * (3 + 4) ? Merci ☕"}},
		Tools: []wire.Tool{
			{Name: "calc", Parameters: map[string]any{"type": "object", "properties": map[string]any{"expression": map[string]any{"type": "string"}}}},
			{Name: "note", Parameters: map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}},
		},
	}
	body, err := a.Prepare(req, provider.Model{Name: "mock-1"})
	if err != nil {
		t.Fatal(err)
	}
	o := stream(t, a, body)
	if o.err != nil {
		t.Fatalf("Stream() error = %v", o.err)
	}
	if !o.resp.Executable() || len(o.resp.ToolCalls) != 2 || o.resp.FinishReason != wire.FinishToolCalls {
		t.Fatalf("Stream() = %+v; want two executable tool calls", o.resp)
	}
	var calc, note map[string]string
	if err := json.Unmarshal([]byte(o.resp.ToolCalls[0].Arguments), &calc); err != nil || calc["expression"] != "12 * (3 + 4)" {
		t.Errorf("calc arguments = %s; want expression 12 * (3 + 4)", o.resp.ToolCalls[0].Arguments)
	}
	if err := json.Unmarshal([]byte(o.resp.ToolCalls[1].Arguments), &note); err != nil || note["text"] != "Combien font 12 * (3 + 4) ? Merci ☕" {
		t.Errorf("note arguments = %s; want the user's words", o.resp.ToolCalls[1].Arguments)
	}
	if reqs := mock.Requests(); len(reqs) != 1 || string(reqs[0].Body) != string(body) {
		t.Errorf("mock received %d requests; want 1 with the prepared body verbatim", len(reqs))
	}
}

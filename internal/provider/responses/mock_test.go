package responses

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/providertest"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestAdapterMockDefaultRoundTrip runs a two-step tool turn against
// internal/mockllm's default script at /v1/responses, streaming and not:
// the prepared request comes back as complete calls, the mock received
// exactly the prepared bytes, and the tool results come back as text.
func TestAdapterMockDefaultRoundTrip(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		t.Run(map[bool]string{true: "stream", false: "json"}[streaming], func(t *testing.T) {
			mock := mockllm.New(mockllm.Default(mockllm.DefaultOptions{Split: 3}))
			srv := httptest.NewServer(mock)
			t.Cleanup(srv.Close)
			a := newAdapter(t, srv.URL+"/v1", Options{Stream: streaming})
			req := providertest.DefaultScriptRequest()
			body, err := a.Prepare(req, provider.Model{Name: "mock-1"})
			if err != nil {
				t.Fatal(err)
			}
			o := providertest.Stream(t, a, body)
			if o.Err != nil {
				t.Fatalf("Stream() error = %v", o.Err)
			}
			r := o.Resp
			if !r.Executable() || len(r.ToolCalls) != 2 || r.FinishReason != wire.FinishToolCalls || r.Text != "Let me check. " || r.ResponseID != "resp_mock" {
				t.Fatalf("Stream() = %+v; want text and two executable tool calls", r)
			}
			providertest.CheckDefaultScriptCalls(t, r.ToolCalls)
			if r.Usage == nil || r.Usage.InputTokens <= 0 || r.Usage.OutputTokens <= 0 {
				t.Errorf("usage = %+v; want positive counts", r.Usage)
			}
			if streaming && len(o.Frames) < 10 || !streaming && len(o.Frames) != 1 {
				t.Errorf("relayed %d frames; want every event, or one body", len(o.Frames))
			}
			reqs := mock.Requests()
			if len(reqs) != 1 || string(reqs[0].Body) != string(body) || reqs[0].Stream != streaming || len(reqs[0].Input) != 1 || len(reqs[0].Tools) != 2 {
				t.Fatalf("mock received %+v; want 1 request with the prepared body verbatim", reqs)
			}

			// Second step: the calls and their results go back.
			asst := provider.Message{Role: wire.RoleAssistant, Content: r.Text}
			for _, c := range r.ToolCalls {
				asst.ToolCalls = append(asst.ToolCalls, wire.Call{ID: c.ProviderID, Name: c.Name, Arguments: c.Arguments})
			}
			req.Messages = append(req.Messages, asst,
				provider.Message{Role: wire.RoleTool, ToolCallID: r.ToolCalls[0].ProviderID, Content: "84"},
				provider.Message{Role: wire.RoleTool, ToolCallID: r.ToolCalls[1].ProviderID, Content: "noted"},
			)
			body, err = a.Prepare(req, provider.Model{Name: "mock-1"})
			if err != nil {
				t.Fatal(err)
			}
			o = providertest.Stream(t, a, body)
			if o.Err != nil {
				t.Fatalf("second Stream() error = %v", o.Err)
			}
			want := `Here is what I found: calc said "84"; note said "noted".`
			if o.Resp.Text != want || o.Resp.FinishReason != wire.FinishStop || len(o.Resp.ToolCalls) != 0 {
				t.Errorf("second Stream() = %q %s; want %q stop", o.Resp.Text, o.Resp.FinishReason, want)
			}
			if last := mock.Requests()[1].LastInput(); last.Type != "function_call_output" || last.Text() != "noted" {
				t.Errorf("mock's last input item = %+v; want the second function_call_output", last)
			}
		})
	}
}

// TestAdapterAgainstMock: the mock's Responses builder and faults, through
// the adapter.
func TestAdapterAgainstMock(t *testing.T) {
	full := mockllm.NewResponsesStream("m").
		Reasoning("enc", "Plan.").Text("Hello there").
		FunctionCalls(2, mockllm.Call{ID: "call_1", Name: "f", Arguments: `{"a":"b"}`}).
		Usage(10, 4, 5, 1)
	tests := []struct {
		name   string
		resp   *mockllm.Response
		stream bool
		idle   time.Duration
		class  provider.Class // empty: success
		finish string
	}{
		{name: "completed", resp: mockllm.NewResponsesStream("m").Text("Hello there").Completed().Response(), stream: true, finish: wire.FinishStop},
		{name: "completed json", resp: mockllm.NewResponsesStream("m").Text("Hello there").Completed().Response(), finish: wire.FinishStop},
		{name: "incomplete", resp: mockllm.NewResponsesStream("m").Text("Hello there").Incomplete("max_output_tokens").Response(), stream: true, finish: wire.FinishLength},
		{name: "incomplete json", resp: mockllm.NewResponsesStream("m").Text("Hello there").Incomplete("content_filter").Response(), finish: wire.FinishContentFilter},
		{name: "failed", resp: mockllm.NewResponsesStream("m").Text("x").Failed("server_error", "boom").Response(), stream: true, class: provider.ClassServer},
		{name: "failed json", resp: mockllm.NewResponsesStream("m").Failed("rate_limit_exceeded", "slow").Response(), class: provider.ClassRateLimit},
		{name: "error event", resp: mockllm.NewResponsesStream("m").Error("rate_limit_exceeded", "Please try again in 1.2s.").Response(), stream: true, class: provider.ClassRateLimit},
		{name: "error json", resp: mockllm.NewResponsesStream("m").Error("rate_limit_exceeded", "slow").Response(), class: provider.ClassRateLimit},
		{name: "no terminal", resp: full.Response(), stream: true, class: provider.ClassStreamClosed},
		{name: "no terminal json", resp: full.Response(), class: provider.ClassMalformed},
		{name: "disconnect", resp: &mockllm.Response{Frames: full.Frames(), DisconnectAfter: 4}, stream: true, class: provider.ClassTransport},
		{name: "disconnect json", resp: &mockllm.Response{Frames: full.Frames(), DisconnectAfter: 4}, class: provider.ClassTransport},
		{name: "stall", resp: &mockllm.Response{Frames: full.Frames(), Stall: time.Minute}, stream: true, idle: 100 * time.Millisecond, class: provider.ClassTimeout},
		{name: "stall json", resp: &mockllm.Response{Frames: full.Frames(), Stall: time.Minute}, idle: 100 * time.Millisecond, class: provider.ClassTimeout},
		{
			name:  "rate limited",
			resp:  mockllm.Error(http.StatusTooManyRequests, "rate_limit_exceeded", "slow down", http.Header{"Retry-After": {"1"}}),
			class: provider.ClassRateLimit, stream: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(mockllm.New(mockllm.Queue(tt.resp)))
			t.Cleanup(srv.Close)
			body := `{"model":"m","input":[],"stream":` + map[bool]string{true: "true", false: "false"}[tt.stream] + `}`
			o := providertest.Stream(t, newAdapter(t, srv.URL+"/v1", Options{Stream: tt.stream, IdleTimeout: tt.idle}), []byte(body))
			if tt.class != "" {
				if f := o.Failure(); f == nil || f.Class != tt.class {
					t.Errorf("Stream() error = %v; want %s", o.Err, tt.class)
				}
				return
			}
			if o.Err != nil {
				t.Fatalf("Stream() error = %v; want nil", o.Err)
			}
			if o.Resp.Text != "Hello there" || o.Resp.FinishReason != tt.finish {
				t.Errorf("Stream() = %q %q; want %q %s", o.Resp.Text, o.Resp.FinishReason, "Hello there", tt.finish)
			}
		})
	}
}

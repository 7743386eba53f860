package deepseek

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/providertest"
	"github.com/turnstream/turnstream/pkg/wire"
)

const echoMissing = "The reasoning_content in the thinking mode must be passed back to the API."

// mockResponse turns an SSE fixture into a mockllm response: data lines as
// Raw frames, comments as keep-alives, [DONE] as Done.
func mockResponse(t testing.TB, name string) *mockllm.Response {
	t.Helper()
	r := &mockllm.Response{}
	for _, ev := range strings.Split(strings.TrimRight(string(fixture(t, name)), "\n"), "\n\n") {
		switch {
		case ev == "data: [DONE]":
			r.Done = true
		case strings.HasPrefix(ev, ": "):
			r.Frames = append(r.Frames, mockllm.Frame{Comment: strings.TrimPrefix(ev, ": ")})
		default:
			r.Frames = append(r.Frames, mockllm.Frame{Data: strings.TrimPrefix(ev, "data: ")})
		}
	}
	return r
}

// deepseekRules answers like DeepSeek in thinking mode: a tool-call turn
// replayed without reasoning_content is a 400; after tool results it
// answers, otherwise it calls tools.
func deepseekRules(t testing.TB) mockllm.Script {
	toolCall, answer := mockResponse(t, "thinking_tool_call.sse"), mockResponse(t, "plain_answer_reasoning.sse")
	return mockllm.ScriptFunc(func(req *mockllm.Request) *mockllm.Response {
		for _, m := range req.Messages {
			if m.Role == "assistant" && len(m.ToolCalls) > 0 && m.ReasoningContent == nil {
				return mockllm.Error(http.StatusBadRequest, "invalid_request_error", echoMissing, http.Header{"X-Ds-Trace-Id": {traceID}})
			}
		}
		if req.LastMessage().Role == "tool" {
			return answer
		}
		return toolCall
	})
}

// TestMockToolLoop runs two steps of a thinking-mode tool loop against
// internal/mockllm: the tool-call turn's reasoning comes back as the echo
// when the model requires it, and DeepSeek's 400 otherwise.
func TestMockToolLoop(t *testing.T) {
	tests := []struct {
		name  string
		model provider.Model
		class provider.Class // of the second step; empty: success
	}{
		{name: "echo required", model: thinking},
		{name: "echo not sent", model: plain, class: provider.ClassInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mock := mockllm.New(deepseekRules(t))
			srv := httptest.NewServer(mock)
			t.Cleanup(srv.Close)
			a := newAdapter(t, srv.URL, Options{})

			req := &provider.Request{
				System:   "Use tools.",
				Messages: []provider.Message{{Role: wire.RoleUser, Content: "Weather in Paris"}, {Role: wire.RoleUser, Content: "and Tokyo?"}},
				Tools:    []wire.Tool{weatherTool},
			}
			first, err := a.Prepare(req, tt.model)
			if err != nil {
				t.Fatalf("Prepare() error = %v", err)
			}
			o := providertest.Stream(t, a, first)
			if o.Err != nil || !o.Resp.Executable() || len(o.Resp.ToolCalls) != 2 {
				t.Fatalf("Stream() = %+v, %v; want two executable tool calls", o.Resp, o.Err)
			}
			// The step as the turn loop would persist it, then its results.
			var calls []wire.Call
			var results []provider.Message
			for _, c := range o.Resp.ToolCalls {
				calls = append(calls, wire.Call{ID: c.ProviderID, Name: c.Name, Arguments: c.Arguments})
				results = append(results, provider.Message{Role: wire.RoleTool, ToolCallID: c.ProviderID, Content: "sunny"})
			}
			req.Messages = append(req.Messages, provider.Message{Role: wire.RoleAssistant, Content: o.Resp.Text, ToolCalls: calls, Reasoning: &o.Resp.Reasoning})
			req.Messages = append(req.Messages, results...)
			second, err := a.Prepare(req, tt.model)
			if err != nil {
				t.Fatalf("Prepare() error = %v", err)
			}
			o2 := providertest.Stream(t, a, second)

			reqs := mock.Requests()
			if len(reqs) != 2 || !bytes.Equal(reqs[0].Body, first) || !bytes.Equal(reqs[1].Body, second) {
				t.Fatalf("mock received %d requests; want the 2 prepared bodies verbatim", len(reqs))
			}
			if got := reqs[0].Messages; len(got) != 2 || got[1].Text() != "Weather in Paris\n\nand Tokyo?" {
				t.Errorf("first request messages = %+v; want system then the joined user text", got)
			}
			if tt.class != "" {
				f := o2.Failure()
				if f == nil || f.Class != tt.class || f.Status != http.StatusBadRequest || f.RequestID != traceID {
					t.Fatalf("second Stream() error = %v (%+v); want %s with HTTP 400 and request id %q", o2.Err, f, tt.class, traceID)
				}
				if provider.DefaultRetryPolicy.Retryable(f.Class) {
					t.Errorf("DefaultRetryPolicy.Retryable(%s) = true; want false", f.Class)
				}
				return
			}
			if o2.Err != nil || o2.Resp.Text != "The answer is 42." {
				t.Fatalf("second Stream() = %+v, %v; want the answer", o2.Resp, o2.Err)
			}
			echoed := reqs[1].Messages[2]
			if echoed.Role != "assistant" || echoed.ReasoningContent == nil || *echoed.ReasoningContent != o.Resp.Reasoning {
				t.Errorf("replayed assistant message = %+v; want reasoning_content %q", echoed, o.Resp.Reasoning)
			}
		})
	}
}

// TestMockFaults: DeepSeek's stream shapes and faults, served by mockllm.
func TestMockFaults(t *testing.T) {
	with := func(r *mockllm.Response, edit func(*mockllm.Response)) *mockllm.Response {
		c := *r
		edit(&c)
		return &c
	}
	answer := mockResponse(t, "keep_alive_queued.sse")
	tests := []struct {
		name   string
		resp   *mockllm.Response
		idle   time.Duration
		class  provider.Class // empty: success
		finish string
		reqID  string
	}{
		{name: "keep-alive while queued", resp: answer, finish: wire.FinishStop},
		{name: "done without blank line", resp: with(answer, func(r *mockllm.Response) { r.DoneWithoutBlankLine = true }), finish: wire.FinishStop},
		{name: "insufficient system resource", resp: mockResponse(t, "insufficient_system_resource.sse"), finish: wire.FinishIncomplete},
		{name: "queued past the idle timeout", resp: with(answer, func(r *mockllm.Response) { r.Stall = time.Minute }), idle: 50 * time.Millisecond, class: provider.ClassTimeout},
		{name: "no done", resp: with(answer, func(r *mockllm.Response) { r.Done = false }), class: provider.ClassStreamClosed},
		{name: "disconnect", resp: with(answer, func(r *mockllm.Response) { r.DisconnectAfter = 4 }), class: provider.ClassTransport},
		{name: "malformed", resp: mockResponse(t, "malformed_chunk.sse"), class: provider.ClassMalformed},
		{name: "empty stop", resp: mockResponse(t, "empty_stop.sse"), class: provider.ClassEmpty},
		{
			name:  "server overloaded",
			resp:  mockllm.Error(http.StatusServiceUnavailable, "server_busy", "Server Overloaded", http.Header{"X-Ds-Trace-Id": {traceID}}),
			class: provider.ClassServer, reqID: traceID,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(mockllm.New(mockllm.Queue(tt.resp)))
			t.Cleanup(srv.Close)
			o := providertest.Stream(t, newAdapter(t, srv.URL, Options{IdleTimeout: tt.idle}), []byte(`{"model":"deepseek-chat","messages":[]}`))
			if tt.class != "" {
				f := o.Failure()
				if f == nil || f.Class != tt.class {
					t.Fatalf("Stream() error = %v; want %s", o.Err, tt.class)
				}
				if tt.reqID != "" && f.RequestID != tt.reqID {
					t.Errorf("Failure.RequestID = %q; want %q", f.RequestID, tt.reqID)
				}
				return
			}
			if o.Err != nil || o.Resp.FinishReason != tt.finish {
				t.Fatalf("Stream() = %+v, %v; want finish %q", o.Resp, o.Err, tt.finish)
			}
		})
	}
}

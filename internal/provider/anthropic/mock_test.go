package anthropic

import (
	"context"
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

// TestAdapterAgainstMock runs the adapter against internal/mockllm, the
// fake every other package uses, so both sides of that boundary agree.
func TestAdapterAgainstMock(t *testing.T) {
	frames := mockllm.NewMessagesStream("m").Usage(5, 0, 0).Text("Hello there").Stop("end_turn", 2).Frames()
	tests := []struct {
		name  string
		resp  *mockllm.Response
		idle  time.Duration
		class provider.Class // empty: success
	}{
		{name: "plain", resp: &mockllm.Response{Frames: frames}},
		{name: "no message_stop", resp: &mockllm.Response{Frames: frames[:len(frames)-1]}, class: provider.ClassStreamClosed},
		{name: "disconnect", resp: &mockllm.Response{Frames: frames, DisconnectAfter: 3}, class: provider.ClassTransport},
		{name: "stall of pings", resp: &mockllm.Response{Frames: frames, Stall: time.Minute, KeepAlive: mockllm.PingKeepAlive}, idle: 300 * time.Millisecond, class: provider.ClassTimeout},
		{name: "overloaded", resp: mockllm.AnthropicError(529, "overloaded_error", "Overloaded", nil), class: provider.ClassServer},
		{name: "rate limited", resp: mockllm.AnthropicError(http.StatusTooManyRequests, "rate_limit_error", "slow down", http.Header{"Retry-After": {"1"}}), class: provider.ClassRateLimit},
		{name: "overloaded mid-stream", resp: mockllm.NewMessagesStream("m").Text("partial").Error("overloaded_error", "Overloaded").Response(), class: provider.ClassServer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(mockllm.New(mockllm.Queue(tt.resp)))
			t.Cleanup(srv.Close)
			o := providertest.Stream(t, newAdapter(t, srv.URL, Options{IdleTimeout: tt.idle}), []byte(`{"model":"m","messages":[],"stream":true}`))
			if tt.class != "" {
				if f := o.Failure(); f == nil || f.Class != tt.class {
					t.Errorf("Stream() error = %v; want %s", o.Err, tt.class)
				}
				return
			}
			providertest.CheckResponse(t, o, providertest.WantResponse{
				Text: "Hello there", Finish: wire.FinishStop, RawFinish: "end_turn", Usage: &wire.Usage{InputTokens: 5, OutputTokens: 2},
			})
		})
	}
}

// TestThinkingToolTurnReplayed: a tool turn with thinking through the
// mock's default script, then the next request of the turn, which sends
// the signed thinking back through Echo: the mock (as Anthropic does)
// checks the signature and that the thinking opens the assistant message,
// and refuses the same request without it.
func TestThinkingToolTurnReplayed(t *testing.T) {
	mock := mockllm.New(mockllm.Default(mockllm.DefaultOptions{Split: 3}))
	srv := httptest.NewServer(mock)
	t.Cleanup(srv.Close)
	a := newAdapter(t, srv.URL, Options{MaxTokens: 8192, ThinkingBudget: 2048})
	req := providertest.DefaultScriptRequest()
	model := provider.Model{Name: "mock-1", Capabilities: API.Capabilities}
	body, err := a.Prepare(req, model)
	if err != nil {
		t.Fatal(err)
	}
	first := providertest.Stream(t, a, body)
	if first.Err != nil || !first.Resp.Executable() || len(first.Resp.ToolCalls) != 2 || first.Resp.FinishReason != wire.FinishToolCalls {
		t.Fatalf("Stream() = %+v, %v; want two executable tool calls", first.Resp, first.Err)
	}
	providertest.CheckDefaultScriptCalls(t, first.Resp.ToolCalls)
	if first.Resp.Reasoning == "" || first.Resp.Echo == "" || strings.Contains(first.Resp.Text, first.Resp.Reasoning) {
		t.Fatalf("reasoning %q, echo %q, text %q; want thinking kept as reasoning and echo only", first.Resp.Reasoning, first.Resp.Echo, first.Resp.Text)
	}
	if reqs := mock.Requests(); len(reqs) != 1 || string(reqs[0].Body) != string(body) || !reqs[0].Thinking {
		t.Fatalf("mock received %d requests; want 1 with thinking and the prepared body verbatim", len(reqs))
	}

	results := []string{"84", "noted"}
	next := func(echo *string) *provider.Request {
		asst := provider.Message{Role: wire.RoleAssistant, Content: first.Resp.Text, Reasoning: echo}
		for _, c := range first.Resp.ToolCalls {
			// The turn loop normalizes ids; the mock's are already usable.
			asst.ToolCalls = append(asst.ToolCalls, wire.Call{ID: c.ProviderID, Name: c.Name, Arguments: c.Arguments})
		}
		r := *req
		r.Messages = append(append([]provider.Message{}, req.Messages...), asst)
		for i, c := range first.Resp.ToolCalls {
			r.Messages = append(r.Messages, provider.Message{Role: wire.RoleTool, ToolCallID: c.ProviderID, Content: results[i]})
		}
		return &r
	}
	body, err = a.Prepare(next(&first.Resp.Echo), model)
	if err != nil {
		t.Fatal(err)
	}
	second := providertest.Stream(t, a, body)
	if second.Err != nil {
		t.Fatalf("Stream() of the replay = %v; want the mock to accept the signed thinking", second.Err)
	}
	if !strings.Contains(second.Resp.Text, `calc said "84"`) || !strings.Contains(second.Resp.Text, `note said "noted"`) || second.Resp.FinishReason != wire.FinishStop {
		t.Errorf("replay answer = %q (%s); want both results reported", second.Resp.Text, second.Resp.FinishReason)
	}

	// Without its echo (foreign reasoning is dropped) the mock refuses the
	// replay as Anthropic does: INVALID_REQUEST, not retried.
	body, err = a.Prepare(next(str("DeepSeek's reasoning_content")), model)
	if err != nil {
		t.Fatal(err)
	}
	providertest.CheckFailure(t, providertest.Stream(t, a, body), provider.Failure{Class: provider.ClassInvalidRequest, Status: http.StatusBadRequest})
}

// TestFloods: hostile Messages streams, generated as the mock writes them,
// end at the attempt's limits.
func TestFloods(t *testing.T) {
	tests := []struct {
		name   string
		flood  mockllm.Flood
		reason string
	}{
		{"endless line", mockllm.Flood{Kind: mockllm.FloodLine, Bytes: 4 << 20}, provider.LimitLineBytes},
		{"event that never ends", mockllm.Flood{Kind: mockllm.FloodDataLines, Bytes: 4 << 20, Piece: 1024}, provider.LimitEventBytes},
		{"huge text", mockllm.Flood{Kind: mockllm.FloodText, Bytes: 1 << 20}, provider.LimitTextBytes},
		{"huge thinking", mockllm.Flood{Kind: mockllm.FloodReasoning, Bytes: 1 << 20}, provider.LimitReasoningBytes},
		{"huge arguments", mockllm.Flood{Kind: mockllm.FloodArguments, Bytes: 1 << 20}, provider.LimitArgumentBytes},
		{"thousands of calls", mockllm.Flood{Kind: mockllm.FloodToolCalls, Count: 5000}, provider.LimitToolCalls},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			flood := tt.flood
			srv := httptest.NewServer(mockllm.New(mockllm.Queue(&mockllm.Response{Frames: mockllm.NewMessagesStream("m").Frames(), Flood: &flood})))
			t.Cleanup(srv.Close)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			_, err := newAdapter(t, srv.URL, Options{}).Stream(ctx, []byte(`{}`), func(provider.Frame) error { return nil })
			if f := provider.AsFailure(err); f == nil || f.Class != provider.ClassResponseTooLarge || f.Reason != tt.reason {
				t.Errorf("Stream() error = %v; want RESPONSE_TOO_LARGE %s", err, tt.reason)
			}
		})
	}
}

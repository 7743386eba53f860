package openaichat

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
			o := providertest.Stream(t, newAdapter(t, srv.URL+"/v1", Options{IdleTimeout: tt.idle}), []byte(`{"model":"m","messages":[]}`))
			if tt.class != "" {
				if f := o.Failure(); f == nil || f.Class != tt.class {
					t.Errorf("Stream() error = %v; want %s", o.Err, tt.class)
				}
				return
			}
			if o.Err != nil {
				t.Fatalf("Stream() error = %v; want nil", o.Err)
			}
			if o.Resp.Text != tt.text || o.Resp.FinishReason != wire.FinishStop {
				t.Errorf("Stream() = %q %q; want %q stop", o.Resp.Text, o.Resp.FinishReason, tt.text)
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
	body, err := a.Prepare(providertest.DefaultScriptRequest(), provider.Model{Name: "mock-1"})
	if err != nil {
		t.Fatal(err)
	}
	o := providertest.Stream(t, a, body)
	if o.Err != nil {
		t.Fatalf("Stream() error = %v", o.Err)
	}
	if !o.Resp.Executable() || len(o.Resp.ToolCalls) != 2 || o.Resp.FinishReason != wire.FinishToolCalls {
		t.Fatalf("Stream() = %+v; want two executable tool calls", o.Resp)
	}
	providertest.CheckDefaultScriptCalls(t, o.Resp.ToolCalls)
	if reqs := mock.Requests(); len(reqs) != 1 || string(reqs[0].Body) != string(body) {
		t.Errorf("mock received %d requests; want 1 with the prepared body verbatim", len(reqs))
	}
}

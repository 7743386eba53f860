package conformance

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/pkg/wire"
)

// IdleTimeout is what adapters under test must use, so the stall case
// ends quickly.
const IdleTimeout = 300 * time.Millisecond

// Subject is an adapter under test.
type Subject struct {
	Dialect Dialect
	// New builds the adapter for a provider at baseURL (ending in /v1),
	// with the given idle timeout.
	New func(t *testing.T, baseURL string, idle time.Duration) provider.Adapter
	// Model is what requests are prepared for. Default: a model with
	// every default capability of openai_chat_completions.
	Model *provider.Model
}

// Request is the request every case sends.
func Request() *provider.Request {
	return &provider.Request{
		System:   "You are terse.",
		Messages: []provider.Message{{Role: wire.RoleUser, Content: "Read src/main.go and search for parser."}},
		Tools: []wire.Tool{
			{Name: "read", Parameters: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}},
			{Name: "search", Parameters: map[string]any{"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string"}}}},
		},
	}
}

// For returns the cases a dialect can express.
func For(d Dialect) []Case {
	have := d.Features()
	var out []Case
	for _, c := range Cases() {
		if !slices.ContainsFunc(c.Needs, func(f Feature) bool { return !slices.Contains(have, f) }) {
			out = append(out, c)
		}
	}
	return out
}

// Run runs every case the subject's dialect can express.
func Run(t *testing.T, s Subject) {
	t.Helper()
	model := provider.Model{Name: "m", ContextTokens: 128000, Capabilities: provider.Capabilities{Text: true, Streaming: true, Tools: true, NativeToolHistory: true}}
	if s.Model != nil {
		model = *s.Model
	}
	for _, c := range For(s.Dialect) {
		t.Run(c.Name, func(t *testing.T) {
			resp := s.Dialect.Render(c.Tr)
			mock := mockllm.New(mockllm.ScriptFunc(func(*mockllm.Request) *mockllm.Response { return resp }))
			srv := httptest.NewServer(mock)
			defer srv.Close()
			a := s.New(t, srv.URL+"/v1", IdleTimeout)
			body, err := a.Prepare(Request(), model)
			if err != nil {
				t.Fatalf("Prepare() error = %v", err)
			}
			var frames []provider.Frame
			ctx, cancel := contextWithTimeout(t, 20*time.Second)
			defer cancel()
			if c.Limits != (provider.Limits{}) {
				ctx = provider.WithLimits(ctx, c.Limits)
			}
			got, err := a.Stream(ctx, body, func(f provider.Frame) error {
				frames = append(frames, f)
				return nil
			})
			check(t, c, frames, got, err)
		})
	}
}

func check(t *testing.T, c Case, frames []provider.Frame, got *assemble.Response, err error) {
	t.Helper()
	w := c.Want
	if w.Class != "" {
		var f *provider.Failure
		if !errors.As(err, &f) {
			t.Fatalf("Stream() = %+v, %v; want a *provider.Failure of class %s", got, err, w.Class)
		}
		if f.Class != w.Class {
			t.Fatalf("Stream() failure class = %s (%v); want %s", f.Class, f, w.Class)
		}
		if w.Reason != "" && f.Reason != w.Reason {
			t.Errorf("Stream() failure reason = %q; want %q", f.Reason, w.Reason)
		}
		if got != nil {
			t.Errorf("Stream() returned a response beside its failure")
		}
		if w.RetryAfter > 0 && !near(f.RetryAfter, w.RetryAfter) {
			t.Errorf("failure RetryAfter = %v; want %v", f.RetryAfter, w.RetryAfter)
		}
		if w.RequestID != "" && f.RequestID != w.RequestID {
			t.Errorf("failure RequestID = %q; want %q", f.RequestID, w.RequestID)
		}
		if b, _ := json.Marshal(f.Snapshot()); strings.Contains(string(b), "secret") {
			t.Errorf("failure snapshot leaks content: %s", b)
		}
		return
	}
	if err != nil {
		t.Fatalf("Stream() error = %v; want a response", err)
	}
	if !got.Terminal {
		t.Errorf("Response.Terminal = false; want true")
	}
	if got.Text != w.Text {
		t.Errorf("Response.Text = %q; want %q", got.Text, w.Text)
	}
	if got.Reasoning != w.Reasoning {
		t.Errorf("Response.Reasoning = %q; want %q", got.Reasoning, w.Reasoning)
	}
	if got.FinishReason != w.Finish {
		t.Errorf("Response.FinishReason = %q (raw %q); want %q", got.FinishReason, got.RawFinishReason, w.Finish)
	}
	if w.RawFinish != "" && got.RawFinishReason != w.RawFinish {
		t.Errorf("Response.RawFinishReason = %q; want %q", got.RawFinishReason, w.RawFinish)
	}
	checkEcho(t, got.Echo, w.Echo)
	if (got.Usage == nil) != (w.Usage == nil) || got.Usage != nil && *got.Usage != *w.Usage {
		t.Errorf("Response.Usage = %+v; want %+v", got.Usage, w.Usage)
	}
	if len(got.ToolCalls) != len(w.Calls) {
		t.Fatalf("Response.ToolCalls = %+v; want %+v", got.ToolCalls, w.Calls)
	}
	for i, wc := range w.Calls {
		gc := got.ToolCalls[i]
		if gc.ProviderID != wc.ID || gc.Name != wc.Name || gc.Arguments != wc.Arguments || gc.Complete != wc.Complete {
			t.Errorf("ToolCalls[%d] = {%q %q %q complete %v}; want {%q %q %q complete %v}",
				i, gc.ProviderID, gc.Name, gc.Arguments, gc.Complete, wc.ID, wc.Name, wc.Arguments, wc.Complete)
		}
	}
	if len(w.Calls) > 0 && got.Executable() != w.Executable {
		t.Errorf("Response.Executable() = %v; want %v", got.Executable(), w.Executable)
	}

	// The frames relayed as they arrived tell the same story: raw bytes
	// for every frame, visible text only, finish and usage once, last.
	var text strings.Builder
	finishes, usages := 0, 0
	for i, f := range frames {
		if len(f.Raw) == 0 {
			t.Errorf("frame %d has no raw bytes", i)
		}
		if f.Delta == nil {
			continue
		}
		text.WriteString(f.Delta.Text)
		if f.Delta.FinishReason != "" {
			finishes++
			if f.Delta.FinishReason != w.Finish {
				t.Errorf("frame %d delta finish = %q; want %q", i, f.Delta.FinishReason, w.Finish)
			}
		}
		if f.Delta.Usage != nil {
			usages++
		}
	}
	if text.String() != w.Text {
		t.Errorf("delta text = %q; want the response text %q", text.String(), w.Text)
	}
	if w.Reasoning != "" && strings.Contains(text.String(), w.Reasoning) {
		t.Errorf("reasoning %q leaked into delta text %q", w.Reasoning, text.String())
	}
	for _, f := range frames {
		if f.Delta == nil {
			continue
		}
		visible := f.Delta.Text
		for _, tc := range f.Delta.ToolCalls {
			visible += tc.Arguments
		}
		for _, e := range w.Echo {
			if strings.Contains(visible, e) {
				t.Errorf("replay state %q leaked into a delta: %q", e, visible)
			}
		}
	}
	if finishes != 1 {
		t.Errorf("finish reported in %d frames; want exactly 1", finishes)
	}
	if want := 0; w.Usage != nil && usages != 1 || w.Usage == nil && usages != want {
		t.Errorf("usage reported in %d frames; want %d", usages, map[bool]int{true: 1, false: 0}[w.Usage != nil])
	}
}

// checkEcho fails t unless echo carries every value of want, in order.
func checkEcho(t *testing.T, echo string, want []string) {
	t.Helper()
	rest := echo
	for _, v := range want {
		i := strings.Index(rest, v)
		if i < 0 {
			t.Errorf("Response.Echo = %q; want it to carry %q, in the order %q", echo, v, want)
			return
		}
		rest = rest[i+len(v):]
	}
}

// near compares a retry hint with its expectation: within 5%, or 1.5s for
// values that came from an HTTP date (second resolution).
func near(got, want time.Duration) bool {
	d := got - want
	if d < 0 {
		d = -d
	}
	tol := want / 20
	if want >= 10*time.Second {
		tol = 1500 * time.Millisecond
	}
	return d <= tol
}

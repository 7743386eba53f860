package scripted

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/pkg/wire"
)

// Adapter serves a Script's calls, in order, one per Stream. It is safe for
// concurrent use, though a re-run is meant to be sequential.
type Adapter struct {
	translator func(provider.Target) Translator

	mu       sync.Mutex
	calls    []Call
	next     int
	prepared [][]byte
	sent     [][]byte
}

var _ provider.Adapter = (*Adapter)(nil)

// API describes the replay adapter: it serves recorded calls, so config
// cannot name it (API.New is nil) and it is built from a Script.
var API = provider.API{
	Name:         "scripted",
	System:       "turnstream.scripted",
	Doc:          "Replays recorded provider calls.",
	Capabilities: provider.Capabilities{Text: true, Streaming: true, Tools: true, NativeToolHistory: true},
	Continuation: provider.ContinueReplay,
}

// Option configures an Adapter.
type Option func(*Adapter) error

// WithTranslator sets how a call's frames are translated, chosen per call
// by its recorded target. Default NewChatTranslator.
func WithTranslator(f func(provider.Target) Translator) Option {
	return func(a *Adapter) error {
		if f == nil {
			return errors.New("scripted: nil translator")
		}
		a.translator = f
		return nil
	}
}

// New returns an adapter serving script's calls. The script is not
// modified.
func New(script *Script, opts ...Option) (*Adapter, error) {
	if script == nil {
		return nil, errors.New("scripted: nil script")
	}
	a := &Adapter{translator: NewChatTranslator, calls: script.Calls}
	for _, o := range opts {
		if err := o(a); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// body is what Prepare serializes: the request as the re-run would have
// sent it, in a deterministic, provider-neutral shape.
type body struct {
	Model    string      `json:"model"`
	System   string      `json:"system,omitempty"`
	Messages []message   `json:"messages"`
	Tools    []wire.Tool `json:"tools,omitempty"`
}

type message struct {
	Role       wire.Role   `json:"role"`
	Content    string      `json:"content,omitempty"`
	ToolCalls  []wire.Call `json:"tool_calls,omitempty"`
	ToolCallID string      `json:"tool_call_id,omitempty"`
	// Reasoning keeps nil (absent) apart from "" (present and empty).
	Reasoning *string  `json:"reasoning,omitempty"`
	Images    []string `json:"images,omitempty"`
}

// Prepare serializes req for model as JSON. The body is sent nowhere; it is
// recorded (Prepared) so a test can compare what a re-run would have sent,
// and Stream reads the model back from it to check that the re-run asks
// for the recorded target.
func (a *Adapter) Prepare(req *provider.Request, model provider.Model) ([]byte, error) {
	if req == nil {
		return nil, provider.Fail(provider.ClassInvalidRequest, "nil request", nil)
	}
	b := body{Model: model.Name, System: req.System, Messages: make([]message, len(req.Messages)), Tools: req.Tools}
	for i, m := range req.Messages {
		b.Messages[i] = message{Role: m.Role, Content: m.Content, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, Reasoning: m.Reasoning, Images: m.Images}
	}
	out, err := json.Marshal(b)
	if err != nil {
		return nil, provider.Fail(provider.ClassInvalidRequest, "request cannot be serialized", err)
	}
	a.mu.Lock()
	a.prepared = append(a.prepared, bytes.Clone(out))
	a.mu.Unlock()
	return out, nil
}

// Prepared returns a copy of every body Prepare built, in order.
func (a *Adapter) Prepared() [][]byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	return cloneAll(a.prepared)
}

// Sent returns a copy of the body of every Stream call, in order: what the
// re-run would have sent, attempt by attempt.
func (a *Adapter) Sent() [][]byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	return cloneAll(a.sent)
}

// Remaining is the number of scripted calls not yet served.
func (a *Adapter) Remaining() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.calls) - a.next
}

// Stream serves the next scripted call: it relays the call's frames to sink
// through the call's translator, each with the delta the translator
// computes, then ends as recorded: the finalized response, a
// *provider.Failure of the recorded class, or, for a hang, the context's
// failure once ctx is done. A sink error is returned as is. The replay is
// bounded by provider.LimitsOf(ctx) as a live stream is: content that
// crosses them fails with RESPONSE_TOO_LARGE, not as a divergence.
//
// A body Prepare did not build, no call left, or a call recorded for
// another model fails with INVALID_REQUEST (wrapping ErrNotPrepared,
// ErrExhausted or ErrDiverged) and serves nothing. Frames that replay to
// another outcome than the recorded one fail wrapping ErrDiverged.
func (a *Adapter) Stream(ctx context.Context, body []byte, sink provider.Sink) (*assemble.Response, error) {
	var b struct {
		Model *string `json:"model"`
	}
	if err := json.Unmarshal(body, &b); err != nil || b.Model == nil {
		return nil, provider.Fail(provider.ClassInvalidRequest, "body was not prepared by the scripted adapter", ErrNotPrepared)
	}
	a.mu.Lock()
	a.sent = append(a.sent, bytes.Clone(body))
	if a.next >= len(a.calls) {
		a.mu.Unlock()
		return nil, provider.Fail(provider.ClassInvalidRequest, "no scripted call left", ErrExhausted)
	}
	c := &a.calls[a.next]
	if c.Target.Model != *b.Model {
		a.mu.Unlock()
		return nil, provider.Fail(provider.ClassInvalidRequest, "model differs from the recorded attempt",
			fmt.Errorf("%w: step %d attempt %d", ErrDiverged, c.Step, c.Attempt))
	}
	a.next++
	a.mu.Unlock()
	return a.replay(ctx, c, sink)
}

func (a *Adapter) replay(ctx context.Context, c *Call, sink provider.Sink) (*assemble.Response, error) {
	t := a.translator(c.Target)
	t.Asm().SetLimits(provider.LimitsOf(ctx).Content())
	for i, f := range c.Frames {
		if err := ctx.Err(); err != nil {
			return nil, provider.AsFailure(err)
		}
		var ferr error
		if isDone(f.Raw) {
			t.Done()
		} else {
			ferr = t.Frame(f.Event, f.Raw)
		}
		if err := t.Asm().Err(); err != nil {
			// This run's limits, not a divergence: the frame that crossed
			// one is not relayed.
			return nil, provider.AsFailure(err)
		}
		if err := sink(provider.Frame{Raw: bytes.Clone(f.Raw), Event: f.Event, Delta: t.Asm().TakeDelta()}); err != nil {
			return nil, err
		}
		if ferr != nil {
			if c.Outcome.Kind == KindFail && i == len(c.Frames)-1 {
				break // the frame that failed the recorded stream: the recorded class follows
			}
			return nil, diverged(c, provider.AsFailure(ferr))
		}
	}
	switch c.Outcome.Kind {
	case KindFail:
		f := provider.Fail(c.Outcome.Class, "recorded failure", nil)
		f.Status, f.RetryAfter, f.RequestID = c.Outcome.Status, c.Outcome.RetryAfter, c.Outcome.RequestID
		return nil, f
	case KindHang:
		<-ctx.Done()
		return nil, provider.AsFailure(ctx.Err())
	}
	if !t.Asm().Reached() {
		return nil, diverged(c, provider.Fail(provider.ClassStreamClosed, "replayed frames never reached the terminal marker", nil))
	}
	if fin, ok := t.(Finalizer); ok {
		r, err := fin.Finalize()
		if err != nil {
			return nil, diverged(c, provider.AsFailure(err))
		}
		return r, nil
	}
	r := t.Asm().Response()
	if err := provider.CheckEmpty(r); err != nil {
		return nil, diverged(c, provider.AsFailure(err))
	}
	return r, nil
}

// diverged marks f, the replay's own outcome of c, as contradicting the
// recording. It keeps f's class, so the executor treats it as the wire
// adapter would have.
func diverged(c *Call, f *provider.Failure) *provider.Failure {
	return provider.Fail(f.Class, "replay diverged from the recording: "+f.Reason,
		fmt.Errorf("%w: step %d attempt %d: %w", ErrDiverged, c.Step, c.Attempt, f))
}

// isDone reports whether raw is the "[DONE]" sentinel.
func isDone(raw []byte) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("[DONE]")) }

func cloneAll(bs [][]byte) [][]byte {
	out := make([][]byte, len(bs))
	for i, b := range bs {
		out[i] = bytes.Clone(b)
	}
	return out
}

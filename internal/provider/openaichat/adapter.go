package openaichat

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaiwire"
	"github.com/turnstream/turnstream/pkg/wire"
)

var timeNow = time.Now

// DefaultIdleTimeout ends a stream that sends no event for this long. SSE
// comments (keep-alives) do not count as events.
const DefaultIdleTimeout = openaiwire.DefaultIdleTimeout

// Options configure an Adapter: BaseURL (required), APIKey (a bearer
// token), Headers, HTTPClient and IdleTimeout (DefaultIdleTimeout when
// zero). Requests always stream.
type Options = provider.AdapterOptions

// API describes Chat Completions.
var API = provider.API{
	Name:         "openai_chat_completions",
	System:       "openai",
	Doc:          "Chat Completions, as OpenAI and any OpenAI-compatible server speak it.",
	Capabilities: provider.Capabilities{Text: true, Streaming: true, Tools: true, NativeToolHistory: true, StructuredOutput: true},
	Continuation: provider.ContinueReplay,
	Replay:       provider.Replay{Native: true},
	Frames:       NewFrameTranslator,
	New:          provider.Build(New),
}

// Adapter streams Chat Completions.
type Adapter struct {
	wire *openaiwire.Client
}

// New builds an adapter. The openai-go client reads nothing from the
// environment: base URL and key are exactly those given, and SDK retries
// are off because the executor owns retries.
func New(o Options) (*Adapter, error) {
	c, err := openaiwire.New(openaiwire.Options{
		AdapterOptions: o,
		Now:            func() time.Time { return timeNow() }, // read at each use: tests fake it
	})
	if err != nil {
		return nil, fmt.Errorf("openaichat: %w", err)
	}
	return &Adapter{wire: c}, nil
}

// Stream sends body and translates the SSE stream, or the one JSON
// completion a server that ignores stream: true answers with.
func (a *Adapter) Stream(ctx context.Context, body []byte, sink provider.Sink) (*assemble.Response, error) {
	res, err := a.wire.Post(ctx, "chat/completions", body)
	if err != nil {
		return nil, err
	}
	defer res.Close()
	reqID := provider.RequestID(res.HTTP.Header)
	fail := func(f *provider.Failure) (*assemble.Response, error) {
		if f.RequestID == "" {
			f.RequestID = reqID
		}
		return nil, f
	}
	if !res.EventStream() {
		r, err := readBody(ctx, res, sink)
		if err != nil {
			return fail(provider.AsFailure(err))
		}
		return finalize(r, reqID)
	}
	t := NewTranslator()
	t.Asm.SetLimits(res.Limits().Content())
	events := res.Events()
	for events.Next() {
		ev := events.Event()
		data := ev.Data
		if bytes.Equal(bytes.TrimSpace(data), []byte("[DONE]")) {
			t.Done()
			if err := t.Asm.Err(); err != nil {
				return fail(provider.AsFailure(err)) // the held-back <think> text crossed a limit
			}
			if err := sink(provider.Frame{Raw: data, Event: ev.Type, Delta: t.Asm.TakeDelta()}); err != nil {
				return fail(provider.AsFailure(err))
			}
			return finalize(t.Asm.Response(), reqID)
		}
		ferr := t.Frame(data)
		if err := t.Asm.Err(); err != nil {
			return fail(provider.AsFailure(err)) // the frame that crossed a limit is not relayed
		}
		if ev.Type == "error" && ferr == nil {
			ferr = provider.Fail(provider.ClassServer, "provider error event", nil)
		}
		if err := sink(provider.Frame{Raw: data, Event: ev.Type, Delta: t.Asm.TakeDelta()}); err != nil {
			return fail(provider.AsFailure(err))
		}
		if ferr != nil {
			return fail(provider.AsFailure(ferr))
		}
	}
	if f := res.Interrupted(ctx, "stream", events.Err()); f != nil {
		return fail(f)
	}
	return fail(provider.Fail(provider.ClassStreamClosed, "stream ended before [DONE]", nil))
}

// finalize applies the response-level checks: a normal stop with nothing in
// it is EMPTY_RESPONSE.
func finalize(r *assemble.Response, reqID string) (*assemble.Response, error) {
	if r.Empty() && (r.FinishReason == wire.FinishStop || r.FinishReason == wire.FinishUnknown) {
		f := provider.Fail(provider.ClassEmpty, "stream completed with no content", nil)
		f.RequestID = reqID
		return nil, f
	}
	return r, nil
}

package responses

import (
	"context"
	"fmt"
	"time"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaiwire"
	"github.com/turnstream/turnstream/pkg/wire"
)

// DefaultIdleTimeout ends an answer that makes no progress for this long:
// no event of a stream (SSE comments do not count), no byte of a
// non-streamed body.
const DefaultIdleTimeout = openaiwire.DefaultIdleTimeout

// Options configure an Adapter: BaseURL (required), APIKey (a bearer
// token), Headers, HTTPClient, IdleTimeout (DefaultIdleTimeout when zero;
// without streaming it must cover the longest generation), Stream (false:
// one JSON response) and Store (keep responses for the durable cursor;
// false keeps nothing provider-side and every request replays history).
type Options = provider.AdapterOptions

// API describes the Responses API.
var API = provider.API{
	Name:         "openai_responses",
	System:       "openai",
	Doc:          "OpenAI's Responses API: streamed or not, with a durable cursor (previous_response_id) when the provider stores responses.",
	Capabilities: provider.Capabilities{Text: true, Streaming: true, Tools: true, StatefulContinuation: true, StructuredOutput: true},
	Continuation: provider.ContinueDurableCursor,
	CursorMode:   "responses",
	Replay:       provider.Replay{Native: true, Echo: EchoName},
	Frames:       NewFrameTranslator,
	Settings:     provider.Settings{NonStreaming: true, Store: true},
	New:          provider.Build(New),
}

// Adapter speaks the Responses API.
type Adapter struct {
	wire   *openaiwire.Client
	stream bool
	store  bool
}

// New builds an adapter. The openai-go client reads nothing from the
// environment: base URL and key are exactly those given, and SDK retries
// are off because the executor owns retries.
func New(o Options) (*Adapter, error) {
	accept := "application/json"
	if o.Stream {
		accept = "text/event-stream"
	}
	c, err := openaiwire.New(openaiwire.Options{
		AdapterOptions: o,
		Accept:         accept,
		Now:            func() time.Time { return timeNow() },
	})
	if err != nil {
		return nil, fmt.Errorf("responses: %w", err)
	}
	return &Adapter{wire: c, stream: o.Stream, store: o.Store}, nil
}

// Stream sends body and translates the answer: an event stream, or one JSON
// response, whichever the server sent (its Content-Type decides, so a
// server that ignores the stream flag is still read right). Every event, or
// the whole body, is relayed to sink as it arrives.
//
// The result carries the response id (the cursor for previous_response_id)
// and, as its Echo, the answer's encrypted reasoning items (sensitive
// provider state, kept where only workers read).
func (a *Adapter) Stream(ctx context.Context, body []byte, sink provider.Sink) (*assemble.Response, error) {
	res, err := a.wire.Post(ctx, "responses", body)
	if err != nil {
		return nil, err
	}
	defer res.Close()
	t := NewTranslator()
	t.Asm.SetLimits(res.Limits().Content())
	var resp *assemble.Response
	if res.EventStream() {
		resp, err = readEvents(ctx, res, t, sink)
	} else {
		resp, err = readBody(ctx, res, t, sink)
	}
	// The feeders return their failures bare; a sink's error passes as is.
	if f, ok := err.(*provider.Failure); ok && f.RequestID == "" { //nolint:errorlint // only our own, unwrapped
		f.RequestID = provider.RequestID(res.HTTP.Header)
	}
	return resp, err
}

// endFailure classifies an answer that ended before its terminal: the idle
// timer, the caller's context, a broken connection, or a clean end too soon.
func endFailure(ctx context.Context, res *openaiwire.Response, readErr error, closed string) *provider.Failure {
	if f := res.Interrupted(ctx, "answer", readErr); f != nil {
		return f
	}
	return provider.Fail(provider.ClassStreamClosed, closed, nil)
}

// finalize applies the response-level check (a normal completion with
// nothing in it is EMPTY_RESPONSE) and keeps the answer's encrypted
// reasoning as its echo.
func finalize(t *Translator) (*assemble.Response, error) {
	r := t.Asm.Response()
	if r.Empty() && (r.FinishReason == wire.FinishStop || r.FinishReason == wire.FinishUnknown) {
		return nil, provider.Fail(provider.ClassEmpty, "response completed with no content", nil)
	}
	r.Echo = encodeEcho(t.Reasoning())
	return r, nil
}

package responses

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaichat"
	"github.com/turnstream/turnstream/pkg/wire"
)

// DefaultIdleTimeout ends an answer that makes no progress for this long:
// no event of a stream (SSE comments do not count), no byte of a
// non-streamed body.
const DefaultIdleTimeout = 60 * time.Second

// MaxBodyBytes bounds a non-streamed response body.
const MaxBodyBytes = 32 << 20

// Options configure an Adapter.
type Options struct {
	// BaseURL is the API root, e.g. https://api.openai.com/v1. Required.
	BaseURL string
	// APIKey is sent as a bearer token; empty sends none.
	APIKey string
	// Headers are sent with every request.
	Headers map[string]string
	// HTTPClient defaults to a client without an overall timeout (answers
	// are bounded by IdleTimeout and the caller's context).
	HTTPClient *http.Client
	// IdleTimeout defaults to DefaultIdleTimeout. Without streaming nothing
	// arrives until the whole response is generated, so it must cover the
	// longest generation.
	IdleTimeout time.Duration
	// Stream asks for a server-sent event stream; false asks for one JSON
	// response. Default false.
	Stream bool
}

// Adapter speaks the Responses API.
type Adapter struct {
	client openai.Client
	idle   time.Duration
	stream bool
}

var errIdle = errors.New("responses: answer idle timeout")

// New builds an adapter. The openai-go client reads nothing from the
// environment: base URL and key are exactly those given, and SDK retries
// are off because the executor owns retries.
func New(o Options) (*Adapter, error) {
	if !strings.HasPrefix(o.BaseURL, "http://") && !strings.HasPrefix(o.BaseURL, "https://") {
		return nil, fmt.Errorf("responses: base URL %q is not http(s)", o.BaseURL)
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	accept := "application/json"
	if o.Stream {
		accept = "text/event-stream"
	}
	opts := []option.RequestOption{
		option.WithHTTPClient(hc),
		option.WithBaseURL(o.BaseURL),
		option.WithMaxRetries(0),
		option.WithHeader("Accept", accept),
	}
	if o.APIKey != "" {
		opts = append(opts, option.WithAPIKey(o.APIKey))
	}
	for k, v := range o.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	idle := o.IdleTimeout
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	// A Client literal, not openai.NewClient: NewClient would read
	// OPENAI_API_KEY and OPENAI_BASE_URL from the environment.
	return &Adapter{client: openai.Client{Options: opts}, idle: idle, stream: o.Stream}, nil
}

// Stream sends body and translates the answer: an event stream, or one JSON
// response, whichever the server sent (its Content-Type decides, so a
// server that ignores the stream flag is still read right). Every event, or
// the whole body, is relayed to sink as it arrives.
//
// The result carries the response id (the cursor for previous_response_id).
// The encrypted reasoning the Translator keeps (Translator.Reasoning) has no
// place in an assemble.Response yet: a replay path would return it beside
// the response and store it as worker-only provider state.
func (a *Adapter) Stream(ctx context.Context, body []byte, sink provider.Sink) (*assemble.Response, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := time.AfterFunc(a.idle, func() { cancel(errIdle) })
	defer idle.Stop()

	var res *http.Response
	err := a.client.Post(ctx, "responses", nil, &res,
		option.WithRequestBody("application/json", body),
		option.WithResponseInto(&res),
	)
	if err != nil {
		return nil, a.requestFailure(ctx, res, err)
	}
	defer res.Body.Close()
	t := NewTranslator()
	progress := func() { idle.Reset(a.idle) }
	var resp *assemble.Response
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt == "text/event-stream" {
		resp, err = readEvents(ctx, res, t, progress, sink)
	} else {
		resp, err = readBody(ctx, res, t, progress, sink)
	}
	// The feeders return their failures bare; a sink's error passes as is.
	if f, ok := err.(*provider.Failure); ok && f.RequestID == "" { //nolint:errorlint // only our own, unwrapped
		f.RequestID = provider.RequestID(res.Header)
	}
	return resp, err
}

// endFailure classifies an answer that ended before its terminal: the idle
// timer, the caller's context, a broken connection, or a clean end too soon.
func endFailure(ctx context.Context, readErr error, closed string) *provider.Failure {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errIdle):
		return provider.Fail(provider.ClassTimeout, "answer idle timeout", cause)
	case ctx.Err() != nil:
		return provider.AsFailure(ctx.Err())
	case readErr != nil:
		return provider.Fail(provider.ClassTransport, "answer broken", readErr)
	}
	return provider.Fail(provider.ClassStreamClosed, closed, nil)
}

// finalize applies the response-level check: a normal completion with
// nothing in it is EMPTY_RESPONSE.
func finalize(t *Translator) (*assemble.Response, error) {
	r := t.Asm.Response()
	if r.Empty() && (r.FinishReason == wire.FinishStop || r.FinishReason == wire.FinishUnknown) {
		return nil, provider.Fail(provider.ClassEmpty, "response completed with no content", nil)
	}
	return r, nil
}

// requestFailure classifies a request that got no answer.
func (a *Adapter) requestFailure(ctx context.Context, res *http.Response, err error) *provider.Failure {
	if errors.Is(context.Cause(ctx), errIdle) {
		return provider.Fail(provider.ClassTimeout, "no response before idle timeout", err)
	}
	if ctx.Err() != nil {
		return provider.AsFailure(ctx.Err())
	}
	if res == nil || res.StatusCode < 400 {
		return provider.Fail(provider.ClassTransport, "request failed", err)
	}
	return openaichat.HTTPFailure(res, err)
}

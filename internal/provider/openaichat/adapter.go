package openaichat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/pkg/wire"
)

var timeNow = time.Now

// DefaultIdleTimeout ends a stream that sends no event for this long. SSE
// comments (keep-alives) do not count as events.
const DefaultIdleTimeout = 60 * time.Second

// Options configure an Adapter.
type Options struct {
	// BaseURL is the API root, e.g. https://api.openai.com/v1. Required.
	BaseURL string
	// APIKey is sent as a bearer token; empty sends none.
	APIKey string
	// Headers are sent with every request.
	Headers map[string]string
	// HTTPClient defaults to a client without an overall timeout (streams
	// are bounded by IdleTimeout and the caller's context).
	HTTPClient *http.Client
	// IdleTimeout defaults to DefaultIdleTimeout.
	IdleTimeout time.Duration
}

// Adapter streams Chat Completions.
type Adapter struct {
	client openai.Client
	idle   time.Duration
}

var errIdle = errors.New("openaichat: stream idle timeout")

// New builds an adapter. The openai-go client reads nothing from the
// environment: base URL and key are exactly those given, and SDK retries
// are off because the executor owns retries.
func New(o Options) (*Adapter, error) {
	if !strings.HasPrefix(o.BaseURL, "http://") && !strings.HasPrefix(o.BaseURL, "https://") {
		return nil, fmt.Errorf("openaichat: base URL %q is not http(s)", o.BaseURL)
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	opts := []option.RequestOption{
		option.WithHTTPClient(hc),
		option.WithBaseURL(o.BaseURL),
		option.WithMaxRetries(0),
		option.WithHeader("Accept", "text/event-stream"),
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
	return &Adapter{client: openai.Client{Options: opts}, idle: idle}, nil
}

// Stream sends body and translates the SSE stream.
func (a *Adapter) Stream(ctx context.Context, body []byte, sink provider.Sink) (*assemble.Response, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := time.AfterFunc(a.idle, func() { cancel(errIdle) })
	defer idle.Stop()

	var res *http.Response
	err := a.client.Post(ctx, "chat/completions", nil, &res,
		option.WithRequestBody("application/json", body),
		option.WithResponseInto(&res),
	)
	if err != nil {
		return nil, a.requestFailure(ctx, res, err)
	}
	defer res.Body.Close()
	reqID := provider.RequestID(res.Header)
	fail := func(f *provider.Failure) (*assemble.Response, error) {
		if f.RequestID == "" {
			f.RequestID = reqID
		}
		return nil, f
	}
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt != "text/event-stream" {
		return fail(nonStreamFailure(res))
	}
	t := NewTranslator()
	dec := ssestream.NewDecoder(&http.Response{Header: res.Header, Body: terminate(res.Body)})
	for dec.Next() {
		idle.Reset(a.idle)
		ev := dec.Event()
		data := bytes.TrimSuffix(ev.Data, []byte("\n"))
		if bytes.Equal(bytes.TrimSpace(data), []byte("[DONE]")) {
			t.Done()
			if err := sink(provider.Frame{Raw: data, Event: ev.Type, Delta: t.Asm.TakeDelta()}); err != nil {
				return fail(provider.AsFailure(err))
			}
			return finalize(t.Asm.Response(), reqID)
		}
		ferr := t.Frame(data)
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
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errIdle):
		return fail(provider.Fail(provider.ClassTimeout, "stream idle timeout", cause))
	case ctx.Err() != nil:
		return fail(provider.AsFailure(ctx.Err()))
	case dec.Err() != nil:
		return fail(provider.Fail(provider.ClassTransport, "stream broken", dec.Err()))
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

// requestFailure classifies a request that got no stream.
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
	return httpFailure(res, err)
}

// httpFailure classifies an HTTP error response (status >= 400).
func httpFailure(res *http.Response, err error) *provider.Failure {
	var code, typ, msg string
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		code, typ, msg = apiErr.Code, apiErr.Type, apiErr.Message
	}
	f := provider.Fail(provider.ClassifyHTTP(res.StatusCode, code, typ, msg), http.StatusText(res.StatusCode), err)
	f.Status = res.StatusCode
	f.RequestID = provider.RequestID(res.Header)
	f.RetryAfter = provider.RetryHint(res.Header, msg, timeNow())
	return f
}

// nonStreamFailure classifies a 2xx response that is not an event stream:
// an error object is an in-band error, anything else is malformed.
func nonStreamFailure(res *http.Response) *provider.Failure {
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	f := provider.AsFailure(NewTranslator().Frame(b))
	if f == nil || f.Class == provider.ClassMalformed {
		f = provider.Fail(provider.ClassMalformed, "response is not an event stream", nil)
	}
	f.Status = res.StatusCode
	return f
}

// terminate makes a stream that ends with a complete line but without the
// blank line that dispatches an SSE event ("data: [DONE]\n" then EOF)
// dispatch it. A stream that ends mid-line stays truncated.
func terminate(rc io.ReadCloser) io.ReadCloser { return &terminatedReader{rc: rc} }

type terminatedReader struct {
	rc         io.ReadCloser
	last, prev byte
	tail       []byte
	eof        bool
}

func (r *terminatedReader) Read(p []byte) (int, error) {
	if r.eof {
		if len(r.tail) == 0 {
			return 0, io.EOF
		}
		n := copy(p, r.tail)
		r.tail = r.tail[n:]
		return n, nil
	}
	n, err := r.rc.Read(p)
	if n > 0 {
		if n >= 2 {
			r.prev, r.last = p[n-2], p[n-1]
		} else {
			r.prev, r.last = r.last, p[0]
		}
	}
	if err == io.EOF {
		r.eof = true
		if r.last == '\n' && r.prev != '\n' {
			r.tail = []byte("\n")
		}
		if n > 0 {
			return n, nil
		}
		return r.Read(p)
	}
	return n, err
}

func (r *terminatedReader) Close() error { return r.rc.Close() }

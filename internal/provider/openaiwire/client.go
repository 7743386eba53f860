package openaiwire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/turnstream/turnstream/internal/provider"
)

// DefaultIdleTimeout ends an answer that makes no progress for this long.
const DefaultIdleTimeout = provider.DefaultIdleTimeout

// Options configure a Client: the adapter's options (BaseURL is the API
// root, paths given to Post are relative to it; APIKey is sent as a bearer
// token; IdleTimeout ends an answer that makes no progress for this long,
// counted from the start of the request, DefaultIdleTimeout when zero or
// less) and the wire's own.
type Options struct {
	provider.AdapterOptions
	// Accept is the Accept header of every request. Defaults to
	// text/event-stream.
	Accept string
	// Now is the clock an HTTP-date Retry-After is read against. Defaults
	// to time.Now.
	Now func() time.Time
}

// Validate reports whether o can build a Client.
func (o Options) Validate() error {
	if !strings.HasPrefix(o.BaseURL, "http://") && !strings.HasPrefix(o.BaseURL, "https://") {
		return fmt.Errorf("openaiwire: base URL %q is not http(s)", o.BaseURL)
	}
	return nil
}

// Client posts request bodies through openai-go.
type Client struct {
	sdk  openai.Client
	idle time.Duration
	now  func() time.Time
}

// errIdle is the cause an idle timeout cancels a request with.
var errIdle = errors.New("openaiwire: idle timeout")

// New builds a client. The openai-go client reads nothing from the
// environment: base URL and key are exactly those given, and SDK retries
// are off because the executor owns retries.
func New(o Options) (*Client, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	accept := o.Accept
	if accept == "" {
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
	now := o.Now
	if now == nil {
		now = time.Now
	}
	// A Client literal, not openai.NewClient: NewClient would read
	// OPENAI_API_KEY and OPENAI_BASE_URL from the environment.
	return &Client{sdk: openai.Client{Options: opts}, idle: idle, now: now}, nil
}

// Post sends body, verbatim, as JSON to path under the base URL and
// returns the answer once its headers arrived: any status below 400 (a
// 2xx that is not what the caller asked for is the caller's to classify).
// The idle clock starts with the request; the caller resets it with
// Response.Progress (Response.Events does so on every event) and must
// Close the response. The answer is bounded by provider.LimitsOf(ctx).
//
// A request that got no answer fails with a *provider.Failure: TIMEOUT if
// the idle clock ran out, the caller's context as provider.AsFailure
// classifies it, TRANSPORT without an HTTP error status, and the class of
// the status and error body (HTTPFailure) with one. An error body is read
// no further than the limits' MaxEventBytes: a longer one is classified by
// its status alone.
func (c *Client) Post(ctx context.Context, path string, body []byte) (*Response, error) {
	limits := provider.LimitsOf(ctx)
	ctx, cancel := context.WithCancelCause(ctx)
	idle := time.AfterFunc(c.idle, func() { cancel(errIdle) })

	var res *http.Response
	err := c.sdk.Post(ctx, path, nil, &res,
		option.WithRequestBody("application/json", body),
		option.WithResponseInto(&res),
		option.WithMiddleware(boundErrorBody(limits.MaxEventBytes)),
	)
	if err != nil {
		f := c.requestFailure(ctx, res, err)
		idle.Stop()
		cancel(nil)
		return nil, f
	}
	return &Response{
		HTTP:    res,
		idle:    idle,
		timeout: c.idle,
		idled:   func() bool { return errors.Is(context.Cause(ctx), errIdle) },
		cancel:  cancel,
		limits:  limits,
	}, nil
}

// errBodyTooLarge ends the reading of an error body past its limit.
var errBodyTooLarge = errors.New("openaiwire: error body too large")

// boundErrorBody makes openai-go read an HTTP error body (it reads it
// whole, to parse the error object) no further than max bytes: past them
// the read fails, and the failure is classified by its status alone.
func boundErrorBody(max int) option.Middleware {
	return func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(req)
		if err == nil && res != nil && res.StatusCode >= 400 && res.Body != nil {
			res.Body = &limitedBody{rc: res.Body, left: int64(max)}
		}
		return res, err
	}
}

// limitedBody reads at most left bytes of rc, then fails with
// errBodyTooLarge if more remain.
type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// One more byte tells a body of exactly the limit from a longer one.
		var one [1]byte
		if n, err := l.rc.Read(one[:]); n == 0 {
			return 0, err
		}
		return 0, errBodyTooLarge
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.rc.Read(p)
	l.left -= int64(n)
	return n, err
}

func (l *limitedBody) Close() error { return l.rc.Close() }

// requestFailure classifies a request that got no answer.
func (c *Client) requestFailure(ctx context.Context, res *http.Response, err error) *provider.Failure {
	if errors.Is(context.Cause(ctx), errIdle) {
		return provider.Fail(provider.ClassTimeout, "no response before idle timeout", err)
	}
	if ctx.Err() != nil {
		return provider.AsFailure(ctx.Err())
	}
	if res == nil || res.StatusCode < 400 {
		return provider.Fail(provider.ClassTransport, "request failed", err)
	}
	return HTTPFailure(res, err, c.now())
}

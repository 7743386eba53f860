package openaiwire

import (
	"context"
	"fmt"
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
	ctx, w := StartWatch(ctx, c.idle)
	var res *http.Response
	err := c.sdk.Post(ctx, path, nil, &res,
		option.WithRequestBody("application/json", body),
		option.WithResponseInto(&res),
		option.WithMiddleware(BoundErrorBody(w.Limits().MaxEventBytes)),
	)
	if err != nil {
		return nil, w.Failed(res, err, func(res *http.Response, err error) *provider.Failure { return HTTPFailure(res, err, c.now()) })
	}
	return w.Answer(res), nil
}

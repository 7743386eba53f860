package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaiwire"
	"github.com/turnstream/turnstream/pkg/wire"
)

var timeNow = time.Now

// DefaultBaseURL is Anthropic's API root.
const DefaultBaseURL = "https://api.anthropic.com"

// DefaultIdleTimeout ends a stream that sends no event for this long; ping
// events and SSE comments do not count.
const DefaultIdleTimeout = openaiwire.DefaultIdleTimeout

// DefaultMaxTokens is the max_tokens of a request when Options set none:
// neither provider.Request nor provider.Model carries an output budget,
// and Messages requires one. 4096 is the largest every Messages model
// accepts (Claude 3 Haiku's cap); a longer answer stops with max_tokens,
// which the turn loop continues.
const DefaultMaxTokens = 4096

// MinThinkingBudget is the smallest budget_tokens Anthropic accepts for
// extended thinking.
const MinThinkingBudget = 1024

// messagesPath is the Messages endpoint under the base URL.
const messagesPath = "v1/messages"

// Options configure an Adapter: BaseURL is the API root as Anthropic's
// SDKs take it (requests go to BaseURL + "/v1/messages"; a BaseURL that
// already ends in /v1 is accepted; DefaultBaseURL when empty); APIKey is
// sent as the SDK sends an API key (option.WithAPIKey), empty sends none;
// Headers are sent with every request (anthropic-beta, a proxy's own);
// HTTPClient and IdleTimeout (DefaultIdleTimeout when zero; pings are not
// progress); MaxTokens is every request's max_tokens (DefaultMaxTokens
// when zero); ThinkingBudget, when set, turns extended thinking on with
// this budget_tokens, at least MinThinkingBudget and under MaxTokens.
// Requests always stream.
type Options = provider.AdapterOptions

// validate reports whether o can build an adapter.
func validate(o Options) error {
	switch {
	case o.BaseURL != "" && !strings.HasPrefix(o.BaseURL, "http://") && !strings.HasPrefix(o.BaseURL, "https://"):
		return fmt.Errorf("anthropic: base URL %q is not http(s)", o.BaseURL)
	case o.IdleTimeout < 0:
		return fmt.Errorf("anthropic: negative idle timeout %v", o.IdleTimeout)
	case o.MaxTokens < 0:
		return fmt.Errorf("anthropic: negative max tokens %d", o.MaxTokens)
	case o.ThinkingBudget < 0:
		return fmt.Errorf("anthropic: negative thinking budget %d", o.ThinkingBudget)
	case o.ThinkingBudget > 0 && o.ThinkingBudget < MinThinkingBudget:
		return fmt.Errorf("anthropic: thinking budget %d under %d", o.ThinkingBudget, MinThinkingBudget)
	case o.ThinkingBudget > 0 && o.ThinkingBudget >= maxTokens(o):
		return fmt.Errorf("anthropic: thinking budget %d not under max tokens %d", o.ThinkingBudget, maxTokens(o))
	}
	return nil
}

func maxTokens(o Options) int {
	if o.MaxTokens == 0 {
		return DefaultMaxTokens
	}
	return o.MaxTokens
}

// Adapter speaks the Messages API.
type Adapter struct {
	sdk       sdk.Client
	idle      time.Duration
	maxTokens int64
	thinking  int64
}

var _ provider.Adapter = (*Adapter)(nil)

// New builds an adapter. The SDK client reads nothing from the environment
// (option.WithoutEnvironmentDefaults: no ANTHROPIC_API_KEY, no
// ANTHROPIC_BASE_URL, no profile): base URL and key are exactly those
// given, and SDK retries are off because the executor owns retries.
func New(o Options) (*Adapter, error) {
	if err := validate(o); err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(strings.TrimSuffix(o.BaseURL, "/"), "/v1")
	if base == "" {
		base = DefaultBaseURL
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(base + "/"),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	}
	if o.APIKey != "" {
		opts = append(opts, option.WithAPIKey(o.APIKey))
	}
	for k, v := range o.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	idle := o.IdleTimeout
	if idle == 0 {
		idle = DefaultIdleTimeout
	}
	return &Adapter{sdk: sdk.NewClient(opts...), idle: idle, maxTokens: int64(maxTokens(o)), thinking: int64(o.ThinkingBudget)}, nil
}

// Stream sends body and translates the event stream. Every event is
// relayed to sink as it arrives, pings included; a failure carries the
// provider's request-id.
func (a *Adapter) Stream(ctx context.Context, body []byte, sink provider.Sink) (*assemble.Response, error) {
	rctx, w := openaiwire.StartWatch(ctx, a.idle)
	var res *http.Response
	err := a.sdk.Post(rctx, messagesPath, body, &res,
		option.WithHeader("Accept", "text/event-stream"),
		option.WithResponseInto(&res),
		option.WithMiddleware(openaiwire.BoundErrorBody(w.Limits().MaxEventBytes)),
	)
	if err != nil {
		return nil, w.Failed(res, err, httpFailure)
	}
	r := w.Answer(res)
	defer r.Close()
	var resp *assemble.Response
	if r.EventStream() {
		resp, err = readEvents(ctx, r, sink)
	} else {
		err = nonStreamFailure(r)
	}
	// The readers return their failures bare; a sink's error passes as is.
	if f, ok := err.(*provider.Failure); ok && f.RequestID == "" { //nolint:errorlint // only our own, unwrapped
		f.RequestID = provider.RequestID(res.Header)
	}
	return resp, err
}

// httpFailure classifies an HTTP error response the SDK returned as err:
// the class from the status and the error body's type and message (the
// message itself is not kept), with the status, the request-id and the
// provider's retry hint. 529 (overloaded) is SERVER, as every 5xx.
func httpFailure(res *http.Response, err error) *provider.Failure {
	var typ, msg string
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		typ, msg = string(apiErr.Type()), apiErr.Message
	}
	reason := http.StatusText(res.StatusCode)
	if res.StatusCode == statusOverloaded {
		reason = "overloaded"
	}
	f := provider.Fail(provider.ClassifyHTTP(res.StatusCode, "", typ, msg), reason, err)
	f.Status = res.StatusCode
	f.RequestID = provider.RequestID(res.Header)
	f.RetryAfter = provider.RetryHint(res.Header, msg, timeNow())
	return f
}

// statusOverloaded is the status Anthropic answers with when overloaded.
const statusOverloaded = 529

// nonStreamFailure classifies a 2xx answer that is not an event stream:
// an error object is an in-band error, a body over the attempt's
// MaxEventBytes is RESPONSE_TOO_LARGE, anything else is malformed.
func nonStreamFailure(r *openaiwire.Response) *provider.Failure {
	b, err := r.ReadBody()
	f := provider.AsFailure(err)
	if f == nil {
		var e errorEvent
		if decode(b, &e) == nil && e.Type == "error" {
			f = inBandFailure(&e)
		} else {
			f = provider.Fail(provider.ClassMalformed, "response is not an event stream", nil)
		}
	}
	f.Status = r.HTTP.StatusCode
	return f
}

// finalize applies the response-level check: a normal end with nothing in
// it is EMPTY_RESPONSE.
func finalize(t *Translator) (*assemble.Response, error) {
	r := t.Response()
	if r.Empty() && (r.FinishReason == wire.FinishStop || r.FinishReason == wire.FinishUnknown) {
		return nil, provider.Fail(provider.ClassEmpty, "stream completed with no content", nil)
	}
	return r, nil
}

package deepseek

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaichat"
)

// DefaultBaseURL is DeepSeek's API root.
const DefaultBaseURL = "https://api.deepseek.com"

// Options configure an Adapter.
type Options struct {
	// BaseURL is the API root; requests go to BaseURL + "/chat/completions".
	// Defaults to DefaultBaseURL.
	BaseURL string
	// APIKey is sent as a bearer token; empty sends none.
	APIKey string
	// Headers are sent with every request.
	Headers map[string]string
	// HTTPClient defaults to a client without an overall timeout (streams
	// are bounded by IdleTimeout and the caller's context).
	HTTPClient *http.Client
	// IdleTimeout ends a stream that sends no event for this long; the
	// keep-alive comments DeepSeek sends while a request is queued are not
	// events. Defaults to openaichat.DefaultIdleTimeout.
	IdleTimeout time.Duration
}

// Validate reports whether o can build an adapter.
func (o Options) Validate() error {
	if o.BaseURL != "" && !strings.HasPrefix(o.BaseURL, "http://") && !strings.HasPrefix(o.BaseURL, "https://") {
		return fmt.Errorf("deepseek: base URL %q is not http(s)", o.BaseURL)
	}
	if o.IdleTimeout < 0 {
		return fmt.Errorf("deepseek: negative idle timeout %v", o.IdleTimeout)
	}
	return nil
}

// Adapter speaks DeepSeek's Chat Completions dialect. Prepare is its own;
// Stream is openaichat's.
type Adapter struct {
	chat *openaichat.Adapter
}

var _ provider.Adapter = (*Adapter)(nil)

// New builds an adapter. Nothing is read from the environment, and SDK
// retries are off: the executor owns retries.
func New(o Options) (*Adapter, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.BaseURL == "" {
		o.BaseURL = DefaultBaseURL
	}
	chat, err := openaichat.New(openaichat.Options{
		BaseURL:     o.BaseURL,
		APIKey:      o.APIKey,
		Headers:     o.Headers,
		HTTPClient:  o.HTTPClient,
		IdleTimeout: o.IdleTimeout,
	})
	if err != nil {
		return nil, fmt.Errorf("deepseek: %w", err)
	}
	return &Adapter{chat: chat}, nil
}

// Stream sends body and translates DeepSeek's event stream (or the one
// JSON completion of a server that ignored stream: true, as openaichat
// reads it): only the literal [DONE] completes a stream; reasoning_content
// goes to reasoning, never to visible deltas; cache hits are subtracted
// from the prompt total; the failure's request id comes from x-ds-trace-id
// when DeepSeek sends it.
func (a *Adapter) Stream(ctx context.Context, body []byte, sink provider.Sink) (*assemble.Response, error) {
	return a.chat.Stream(ctx, body, sink)
}

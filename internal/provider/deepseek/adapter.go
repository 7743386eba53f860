package deepseek

import (
	"context"
	"fmt"
	"strings"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaichat"
)

// DefaultBaseURL is DeepSeek's API root.
const DefaultBaseURL = "https://api.deepseek.com"

// Options configure an Adapter: BaseURL (DefaultBaseURL when empty;
// requests go to BaseURL + "/chat/completions"), APIKey (a bearer token),
// Headers, HTTPClient and IdleTimeout (openaichat.DefaultIdleTimeout when
// zero; the keep-alive comments DeepSeek sends while a request is queued
// are not progress). Requests always stream.
type Options = provider.AdapterOptions

// API describes DeepSeek's Chat Completions dialect: its thinking mode
// requires the reasoning_content of a tool-call turn echoed when the turn
// is replayed.
var API = provider.API{
	Name:         "deepseek_chat_completions",
	System:       "deepseek",
	Doc:          "Chat Completions in DeepSeek's dialect: reasoning_content is echoed on replayed tool-call turns.",
	Capabilities: provider.Capabilities{Text: true, Streaming: true, Tools: true, NativeToolHistory: true, ReasoningEcho: true},
	Continuation: provider.ContinueReplay,
	Replay:       provider.Replay{Native: true, Echo: "reasoning_content"},
	Frames:       NewFrameTranslator,
	New:          provider.Build(New),
}

// validate reports whether o can build an adapter.
func validate(o Options) error {
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
	if err := validate(o); err != nil {
		return nil, err
	}
	if o.BaseURL == "" {
		o.BaseURL = DefaultBaseURL
	}
	chat, err := openaichat.New(o)
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
//
// Its echo is the reasoning itself: DeepSeek takes it back as the
// reasoning_content of the replayed assistant message.
func (a *Adapter) Stream(ctx context.Context, body []byte, sink provider.Sink) (*assemble.Response, error) {
	resp, err := a.chat.Stream(ctx, body, sink)
	if resp != nil {
		resp.Echo = resp.Reasoning
	}
	return resp, err
}

package provider

import (
	"net/http"
	"time"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/pkg/wire"
)

// API describes one wire API: its name, what it can serve by default, how
// it continues a conversation, how its history is replayed to it, the
// provider settings it accepts and how its adapter is built. Nothing else
// in turnstream knows an API by name: capability flags and these fields
// decide. Each API's package declares its API; internal/provider/apis
// registers them all in one list.
type API struct {
	// Name is the config's api value, e.g. "openai_chat_completions".
	Name string
	// Doc is one sentence on the API for the config schema.
	Doc string
	// System is the API's GenAI system in traces (gen_ai.system and
	// gen_ai.provider.name of the OpenTelemetry semantic conventions):
	// the API's maker, such as "openai", whoever serves it.
	System string
	// Capabilities are the defaults; config may override them per provider
	// and per model.
	Capabilities Capabilities
	// Continuation is how the API carries a conversation across turns.
	Continuation Continuation
	// CursorMode is the envelope mode of the API's durable cursor, "" for
	// APIs without one.
	CursorMode string
	// Replay says how history is replayed to the API.
	Replay Replay
	// Settings are the provider settings the API accepts beyond the common
	// ones.
	Settings Settings
	// CallIDFormat is the tool-call id format the API accepts by default
	// (CallIDDefault when empty); config may set a stricter one.
	CallIDFormat string
	// New builds the API's adapter; nil for an API that config cannot name
	// (the scripted replay adapter, built from recorded frames).
	New func(AdapterOptions) (Adapter, error)
	// Frames reads the API's recorded frames back, for the replay adapter;
	// nil when its recordings cannot be replayed.
	Frames func() FrameTranslator
}

// FrameTranslator turns one call's recorded frames back into operations
// on an assembler, as the API's adapter reads them live. The replay
// adapter gives it every frame in order, except a "[DONE]" sentinel, which
// calls Done.
type FrameTranslator interface {
	// Frame translates one frame: its SSE event name ("" when none) and its
	// data verbatim. It returns a *Failure where the adapter would fail the
	// stream on this frame (malformed, in-band error).
	Frame(event string, data []byte) error
	// Done records the stream's terminal "[DONE]" marker.
	Done()
	// Asm is the assembler the frames build.
	Asm() *assemble.Assembler
}

// FrameFinalizer is implemented by a FrameTranslator whose adapter applies
// its own response-level checks once the stream reached its terminal
// marker (Responses deriving the outcome from the response status, or
// returning an echo). Without it, the provider-neutral check applies: a
// normal stop with nothing in it is EMPTY_RESPONSE.
type FrameFinalizer interface {
	// Finalize returns the finalized response, or a *Failure.
	Finalize() (*assemble.Response, error)
}

// Configurable reports whether config may name the API.
func (a API) Configurable() bool { return a.New != nil }

// Continuation is how an API carries a conversation from one turn to the
// next.
type Continuation string

// Continuations.
const (
	// ContinueReplay: the provider is stateless between calls; every turn
	// replays the history (Chat Completions).
	ContinueReplay Continuation = "replay"
	// ContinueDurableCursor: the provider keeps the conversation and hands
	// back a cursor that the next turn sends instead of the history
	// (Responses previous_response_id).
	ContinueDurableCursor Continuation = "durable-cursor"
	// ContinueTurnLocal: the provider accumulates state within one tool
	// loop but keeps nothing across turns (Anthropic Messages).
	ContinueTurnLocal Continuation = "turn-local"
)

// Replay says how history is replayed to an API.
type Replay struct {
	// Native is the API-mode gate of native tool history: the API's wire
	// carries prior tool calls and results in their own shape. The
	// provider's NativeToolHistory and the model's Tools capabilities gate
	// it further.
	Native bool
	// Echo names the replay echo the API keeps of an answer with tool
	// calls (its adapter returns it as assemble.Response.Echo and gets it
	// back as Message.Reasoning), "" for none. It is sent back only to the
	// provider and API that produced it; the ReasoningEcho capability
	// says whether a native replay requires it.
	Echo string
	// EchoSameModel narrows the echo to the model that produced it
	// (Anthropic's thinking signatures), not every model of its provider.
	EchoSameModel bool
}

// Settings are the provider settings an API accepts beyond the common ones.
type Settings struct {
	// NonStreaming: the API can answer with one non-streamed response
	// (stream: false).
	NonStreaming bool
	// Store: the provider can keep responses for a durable cursor
	// (store: true).
	Store bool
	// MaxTokens: requests carry an output budget (max_tokens).
	MaxTokens bool
	// Thinking: extended thinking can be turned on (thinking_budget).
	Thinking bool
}

// DefaultIdleTimeout is how long an answer may make no progress before it
// ends: the idle timeout of every configured provider (idle_timeout) and of
// every adapter given none.
const DefaultIdleTimeout = 60 * time.Second

// AdapterOptions configure any API's adapter; each API reads the fields
// it has a use for.
type AdapterOptions struct {
	// BaseURL is the API root, e.g. https://api.openai.com/v1. Required
	// unless the API has a default.
	BaseURL string
	// APIKey is the provider's credential; empty sends none.
	APIKey string
	// Headers are sent with every request.
	Headers map[string]string
	// HTTPClient defaults to a client without an overall timeout (answers
	// are bounded by IdleTimeout and the caller's context).
	HTTPClient *http.Client
	// IdleTimeout ends an answer that makes no progress for this long
	// (keep-alives are not progress); zero takes the adapter's default,
	// DefaultIdleTimeout.
	// Without streaming nothing arrives until the whole response is
	// generated, so it must cover the longest generation.
	IdleTimeout time.Duration
	// Stream asks for a server-sent event stream; false asks for one JSON
	// response (APIs with Settings.NonStreaming).
	Stream bool
	// Store asks the provider to keep each response, so the next request
	// can continue it by id (APIs with Settings.Store).
	Store bool
	// MaxTokens is every request's output budget, for APIs that require
	// one (Settings.MaxTokens); zero takes the adapter's default.
	MaxTokens int
	// ThinkingBudget turns the model's extended thinking on with this
	// budget of tokens (Settings.Thinking); zero leaves it off.
	ThinkingBudget int
}

// SchemaFragment is the API's part of the config schema: what a provider
// of this API must also satisfy, nil for nothing more than the common
// rules. It is derived from Settings, so the schema and config
// validation say the same thing.
func (a API) SchemaFragment() map[string]any {
	props := map[string]any{}
	if !a.Settings.NonStreaming {
		props["stream"] = map[string]any{"const": true}
	}
	if !a.Settings.Store {
		props["store"] = map[string]any{"const": false}
	}
	if !a.Settings.MaxTokens {
		props["max_tokens"] = false // no such setting
	}
	if !a.Settings.Thinking {
		props["thinking_budget"] = false
	}
	if len(props) == 0 {
		return nil
	}
	return map[string]any{"properties": props}
}

// Build turns an adapter package's New into an API's constructor, so a
// failed New yields a nil Adapter, never a typed nil.
func Build[A Adapter](newAdapter func(AdapterOptions) (A, error)) func(AdapterOptions) (Adapter, error) {
	return func(o AdapterOptions) (Adapter, error) {
		a, err := newAdapter(o)
		if err != nil {
			return nil, err
		}
		return a, nil
	}
}

// CheckEmpty is the provider-neutral response check of a finished answer:
// a normal stop with nothing in it is EMPTY_RESPONSE.
func CheckEmpty(r *assemble.Response) error {
	if r.Empty() && (r.FinishReason == wire.FinishStop || r.FinishReason == wire.FinishUnknown) {
		return Fail(ClassEmpty, "response completed with no content", nil)
	}
	return nil
}

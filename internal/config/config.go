package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/turnstream/turnstream/internal/provider"
)

// API names a provider's wire API: one of the configurable APIs of
// internal/provider/apis.
type API string

// Config is a turnstream worker's configuration file (YAML): providers, models,
// routes, budgets, worker and NATS settings, limits. API keys are read from
// the environment or from files named here, never from the file itself or
// from requests. Unknown keys are errors, so typos fail.
//
// The doc comments of these types and of their fields, and their
// jsonschema tags, are schemas/config.schema.json (go generate ./schemas
// writes it): the first paragraph of each comment is its description.
type Config struct {
	// The model services the worker can call. Names are unique.
	Providers []Provider `yaml:"providers" json:"providers" jsonschema:"required,minItems=1"`
	// Each provider's models and their capabilities. A provider and name
	// pair is unique.
	Models []Model `yaml:"models" json:"models" jsonschema:"required,minItems=1"`
	// Map a request's route name to a primary target and its fallback
	// chain. A route named "default" is required; it serves requests that
	// name none.
	Routes []Route `yaml:"routes" json:"routes" jsonschema:"required,minItems=1"`
	// Per-turn defaults, and the ceiling a request's budgets may not
	// exceed.
	Budgets Budgets `yaml:"budgets" json:"budgets"`
	// Tunes the consume loop.
	Worker Worker `yaml:"worker" json:"worker"`
	// The server and subject prefix.
	NATS NATS `yaml:"nats" json:"nats"`
	// Tunes prompt assembly: how history that does not fit the context
	// window is compressed, and the replay echo cap.
	History History `yaml:"history" json:"history"`
	// Bound what one provider answer and one tool result may bring in.
	Limits Limits `yaml:"limits,omitempty" json:"limits,omitempty"`
}

// Limits are bounds on what the worker takes in from providers and tools.
type Limits struct {
	// Bound each provider attempt.
	Response ResponseLimits `yaml:"response,omitempty" json:"response,omitempty" jsonschema:"title=Response limits"`
	// Bound each tool result stored.
	ToolResult ToolResultLimits `yaml:"tool_result,omitempty" json:"tool_result,omitempty" jsonschema:"title=Tool result limits"`
}

// ResponseLimits are per provider attempt, enforced while the answer
// streams so nothing is buffered past them. Crossing one fails the attempt
// with RESPONSE_TOO_LARGE (its reason names the limit): never retried on
// the same target, the route falls back to its next target. Absent or
// zero fields mean the default; the defaults let whatever passes them be
// published with NATS's default 1 MiB max payload (a chunk record holds a
// frame of at most max_event_bytes and its delta, at most 3 x 256 KiB plus
// its envelope; a message record at most max_message_bytes plus its
// envelope). Raise them together with the server's max_payload.
//
// The defaults in detail (1,044,480 bytes of record, 4 KiB being kept for
// headers):
//
//   - a raw frame record (TURN_RAW) carries one frame as it arrived (at
//     most MaxEventBytes, 256 KiB) and a few headers: under 260 KiB;
//   - the frame's chunk record carries its normalized delta (at most twice
//     the frame: decoded strings escaped again), plus an envelope under
//     2 KiB: 2 * 256 KiB + 2 KiB = 514 KiB;
//   - the assistant message record carries at most MaxMessageBytes (960
//     KiB, counted JSON-escaped: text, every call's id, name and arguments)
//     plus an envelope under 4 KiB: under 964 KiB. MaxTextBytes (512 KiB)
//     and MaxArgumentBytes (256 KiB a call) bound the parts, the message
//     limit their sum: 128 calls of 256 KiB would not fit.
//
// The fields match provider.Limits one for one: the worker converts with
// provider.Limits(cfg.Limits.Response).
type ResponseLimits struct {
	// Caps one SSE line, counted since the last newline (1024 to 64 MiB, at
	// most max_event_bytes). Default 262144 (256 KiB).
	MaxLineBytes int `yaml:"max_line_bytes,omitempty" json:"max_line_bytes,omitempty" jsonschema:"minimum=0,maximum=67108864"`
	// Caps one SSE event (every line since the last blank line), a
	// non-streamed body, an HTTP error body and every frame relayed (1024
	// to 64 MiB, at most max_stream_bytes). Default 262144 (256 KiB).
	MaxEventBytes int `yaml:"max_event_bytes,omitempty" json:"max_event_bytes,omitempty" jsonschema:"minimum=0,maximum=67108864"`
	// Caps one answer's event stream, comments and framing included (1024
	// to 1 GiB). Default 67108864 (64 MiB).
	MaxStreamBytes int `yaml:"max_stream_bytes,omitempty" json:"max_stream_bytes,omitempty" jsonschema:"minimum=0,maximum=1073741824"`
	// Caps the visible text of one answer. Default 524288 (512 KiB).
	MaxTextBytes int `yaml:"max_text_bytes,omitempty" json:"max_text_bytes,omitempty" jsonschema:"minimum=0,maximum=67108864"`
	// Caps the reasoning of one answer. Default 524288 (512 KiB).
	MaxReasoningBytes int `yaml:"max_reasoning_bytes,omitempty" json:"max_reasoning_bytes,omitempty" jsonschema:"minimum=0,maximum=67108864"`
	// Caps the tool calls of one answer (at most 4096). Default 128.
	MaxToolCalls int `yaml:"max_tool_calls,omitempty" json:"max_tool_calls,omitempty" jsonschema:"minimum=0,maximum=4096"`
	// Caps one tool call's arguments. Default 262144 (256 KiB).
	MaxArgumentBytes int `yaml:"max_argument_bytes,omitempty" json:"max_argument_bytes,omitempty" jsonschema:"minimum=0,maximum=67108864"`
	// Caps the finalized assistant message: its text and every call's id,
	// name and arguments, counted JSON-escaped ('<' counts six bytes).
	// Default 983040 (960 KiB).
	MaxMessageBytes int `yaml:"max_message_bytes,omitempty" json:"max_message_bytes,omitempty" jsonschema:"minimum=0,maximum=67108864"`
	// Caps the frames relayed for one answer (at most 16777216). Default
	// 131072.
	MaxChunks int `yaml:"max_chunks,omitempty" json:"max_chunks,omitempty" jsonschema:"minimum=0,maximum=16777216"`
}

// DefaultResponseLimits are the ResponseLimits defaults.
var DefaultResponseLimits = ResponseLimits(provider.DefaultLimits) // declared once, where they are enforced

// ToolResultLimits bound the tool results the worker stores.
type ToolResultLimits struct {
	// Caps the content of a stored tool result (1024 to 64 MiB); a larger
	// result is stored truncated, with a marker saying so and its full
	// size. Default 262144 (256 KiB).
	MaxBytes int `yaml:"max_bytes,omitempty" json:"max_bytes,omitempty" jsonschema:"minimum=0,maximum=67108864"`
	// Pass tool results through credential redaction before they are
	// stored, and flag those redacted. Default true.
	Redact *bool `yaml:"redact,omitempty" json:"redact,omitempty"`
}

// DefaultToolResultMaxBytes is the ToolResultLimits.MaxBytes default.
const DefaultToolResultMaxBytes = 256 << 10

// Redacts reports whether tool results are redacted before they are stored.
func (t ToolResultLimits) Redacts() bool { return t.Redact == nil || *t.Redact }

// History is prompt assembly settings.
type History struct {
	// A route that summarizes older history left out to fit the context
	// window. Its input is sanitized (no reasoning, echo or secrets).
	// Default: none, a fixed notice says what was left out.
	SummaryRoute string `yaml:"summary_route,omitempty" json:"summary_route,omitempty" jsonschema:"pattern=^[A-Za-z0-9_-]{1\\,128}$"`
	// Bytes of provider replay echo kept per tool-call step (DeepSeek
	// reasoning_content, Anthropic signed thinking, Responses encrypted
	// reasoning). A larger echo is not kept; a turn whose required echo is
	// missing is replayed as flat text. Default 65536.
	EchoCap int `yaml:"echo_cap,omitempty" json:"echo_cap,omitempty" jsonschema:"minimum=0"`
	// Fraction of the context window kept for the answer when selecting
	// history. Default 0.25.
	Reserve float64 `yaml:"reserve,omitempty" json:"reserve,omitempty" jsonschema:"exclusiveMinimum=0,exclusiveMaximum=1"`
}

// Provider is one model service. At most one of api_key_env and
// api_key_file may be set; with neither, requests carry no key.
type Provider struct {
	// Identifies the provider in models and routes.
	Name string `yaml:"name" json:"name" jsonschema:"required,minLength=1,maxLength=128"`
	// The wire API; each brings its capability defaults.
	API API `yaml:"api" json:"api" jsonschema:"required"`
	// The API root, e.g. https://api.openai.com/v1.
	BaseURL string `yaml:"base_url" json:"base_url" jsonschema:"required,pattern=^https?://[^\\s]+$"`
	// Names the environment variable holding the key.
	APIKeyEnv string `yaml:"api_key_env,omitempty" json:"api_key_env,omitempty" jsonschema:"title=API key environment variable,pattern=^[A-Za-z_][A-Za-z0-9_]*$"`
	// Names a file holding the key; surrounding whitespace is trimmed.
	APIKeyFile string `yaml:"api_key_file,omitempty" json:"api_key_file,omitempty" jsonschema:"minLength=1"`
	// Extra HTTP headers sent with every request. No secrets: credentials
	// go in api_key_env or api_key_file, so Authorization and API-key
	// headers are refused.
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
	// Ends a stream that sends no event for this long. Default 60s.
	IdleTimeout Duration `yaml:"idle_timeout,omitempty" json:"idle_timeout,omitempty"`
	// Keeps the provider registered but advertising no models and refusing
	// execution.
	Deprecated bool `yaml:"deprecated,omitempty" json:"deprecated,omitempty"`
	// Overrides of the api's capability defaults.
	Capabilities Capabilities `yaml:"capabilities,omitempty" json:"capabilities,omitempty"`
	// The provider's retry policy.
	Retry Retry `yaml:"retry,omitempty" json:"retry,omitempty"`
	// The tool-call id format the provider accepts: "default" (up to 40
	// characters of [A-Za-z0-9_-]) or "alnum9" (exactly 9 alphanumerics, as
	// Mistral requires). Histories sent to it are remapped consistently on
	// both sides of each call/result pair.
	ToolCallIDFormat string `yaml:"tool_call_id_format,omitempty" json:"tool_call_id_format,omitempty" jsonschema:"title=Tool-call id format,enum=default,enum=alnum9"`
	// openai_responses only: ask the provider to keep each response so the
	// next request continues from it with previous_response_id (the
	// durable cursor) instead of replaying history. Default false: nothing
	// is kept provider-side.
	Store bool `yaml:"store,omitempty" json:"store,omitempty"`
	// Whether requests stream (default true). openai_responses supports
	// false: one non-streamed response.
	Stream *bool `yaml:"stream,omitempty" json:"stream,omitempty"`
	// anthropic_messages only: every request's max_tokens, its output
	// budget. Default 4096.
	MaxTokens int `yaml:"max_tokens,omitempty" json:"max_tokens,omitempty" jsonschema:"minimum=1"`
	// anthropic_messages only: turns extended thinking on with this
	// budget_tokens (at least 1024, under max_tokens). The signed thinking
	// of a tool-use step is replayed to the same model only. Default 0:
	// off.
	ThinkingBudget int `yaml:"thinking_budget,omitempty" json:"thinking_budget,omitempty" jsonschema:"minimum=0"`
}

// Capabilities are overrides of the capability defaults that come with the
// provider's api (and, on a model, with its provider). A target is used
// only when its capabilities cover the request. Unset fields keep the
// defaults.
type Capabilities struct {
	// Text generation.
	Text *bool `yaml:"text,omitempty" json:"text,omitempty"`
	// Streaming responses.
	Streaming *bool `yaml:"streaming,omitempty" json:"streaming,omitempty"`
	// The model can call offered tools.
	Tools *bool `yaml:"tools,omitempty" json:"tools,omitempty"`
	// Prior tool calls and results may be replayed natively (assistant
	// tool_calls, tool messages).
	NativeToolHistory *bool `yaml:"native_tool_history,omitempty" json:"native_tool_history,omitempty"`
	// Tool-call turns must be replayed with the provider's reasoning
	// (DeepSeek thinking mode).
	ReasoningEcho *bool `yaml:"reasoning_echo,omitempty" json:"reasoning_echo,omitempty"`
	// The provider keeps a durable cursor between calls (Responses
	// previous_response_id).
	StatefulContinuation *bool `yaml:"stateful_continuation,omitempty" json:"stateful_continuation,omitempty"`
	// The provider can constrain output to a JSON Schema.
	StructuredOutput *bool `yaml:"structured_output,omitempty" json:"structured_output,omitempty"`
}

// Retry is how failed attempts are retried on the same target before the
// chain falls back. Defaults: normal mode, 2 retries, 500ms doubling to
// 10s with 10% jitter.
type Retry struct {
	// normal retries EMPTY_RESPONSE, RATE_LIMIT, SERVER, TIMEOUT and
	// TRANSPORT up to max_retries; always retries every request failure
	// until success or cancellation; never does not retry.
	Mode string `yaml:"mode,omitempty" json:"mode,omitempty" jsonschema:"enum=normal,enum=always,enum=never"`
	// Retries per target in normal mode. Default 2; -1 for none.
	MaxRetries int `yaml:"max_retries,omitempty" json:"max_retries,omitempty" jsonschema:"minimum=-1"`
	// The first delay. Default 500ms.
	InitialDelay Duration `yaml:"initial_delay,omitempty" json:"initial_delay,omitempty"`
	// Caps computed delays and the provider retry hints honoured; a longer
	// hint moves to the next target. Default 10s.
	MaxDelay Duration `yaml:"max_delay,omitempty" json:"max_delay,omitempty"`
	// Symmetric random fraction applied to computed delays. Default 0.1;
	// -1 for none.
	Jitter float64 `yaml:"jitter,omitempty" json:"jitter,omitempty" jsonschema:"minimum=-1,maximum=1"`
}

// Streams reports whether the provider's requests stream.
func (p Provider) Streams() bool { return p.Stream == nil || *p.Stream }

// Model is one model of a provider.
type Model struct {
	// The name of a configured provider.
	Provider string `yaml:"provider" json:"provider" jsonschema:"required,minLength=1,maxLength=128"`
	// The model name the provider's API expects.
	Name string `yaml:"name" json:"name" jsonschema:"required,minLength=1,maxLength=128"`
	// Whether the model can call tools. Default true.
	SupportsTools *bool `yaml:"supports_tools,omitempty" json:"supports_tools,omitempty"`
	// The model's context window in tokens. Default 128000.
	ContextTokens int `yaml:"context_tokens,omitempty" json:"context_tokens,omitempty" jsonschema:"minimum=0"`
	// Overrides of the provider's capabilities for this model.
	// supports_tools, when set, wins for tools.
	Capabilities Capabilities `yaml:"capabilities,omitempty" json:"capabilities,omitempty"`
}

// Tools reports whether the model supports tool calls.
func (m Model) Tools() bool { return m.SupportsTools == nil || *m.SupportsTools }

// Route is a named chain of targets: the first is primary, the rest fall
// back in order.
type Route struct {
	// The route name requests use: 1 to 128 characters of [A-Za-z0-9_-].
	Name string `yaml:"name" json:"name" jsonschema:"required,pattern=^[A-Za-z0-9_-]{1\\,128}$"`
	// The primary target first, then the fallback chain.
	Targets []Target `yaml:"targets" json:"targets" jsonschema:"required,minItems=1"`
}

// Target is one configured provider and model.
type Target struct {
	// The name of a configured provider.
	Provider string `yaml:"provider" json:"provider" jsonschema:"required,minLength=1,maxLength=128"`
	// The name of a model configured for that provider.
	Model string `yaml:"model" json:"model" jsonschema:"required,minLength=1,maxLength=128"`
}

func (t Target) String() string { return t.Provider + "/" + t.Model }

// Budgets are the per-turn defaults (the budget values inline) and the
// ceiling a request may not exceed.
type Budgets struct {
	BudgetValues `yaml:",inline"`
	// Caps the budgets a request may ask for. Absent or zero fields, and
	// fields below the defaults, are raised to the defaults.
	Ceiling BudgetValues `yaml:"ceiling,omitempty" json:"ceiling,omitempty"`
}

// BudgetValues are the bounds of one turn. Absent or zero fields mean the
// default.
type BudgetValues struct {
	// Caps provider calls per turn. Default 8.
	MaxIterations int `yaml:"max_iterations,omitempty" json:"max_iterations,omitempty" jsonschema:"minimum=0"`
	// Caps tool calls per turn. Default 16.
	MaxToolCalls int `yaml:"max_tool_calls,omitempty" json:"max_tool_calls,omitempty" jsonschema:"minimum=0"`
	// Caps identical failures of one tool. Default 2.
	MaxRepeatedToolFailures int `yaml:"max_repeated_tool_failures,omitempty" json:"max_repeated_tool_failures,omitempty" jsonschema:"minimum=0"`
	// Caps a turn's duration. Default 2m.
	WallClock Duration `yaml:"wall_clock,omitempty" json:"wall_clock,omitempty"`
}

// Worker tunes the consume loop.
type Worker struct {
	// How many turns one worker runs at once. Default 64.
	Concurrency int `yaml:"concurrency,omitempty" json:"concurrency,omitempty" jsonschema:"minimum=0"`
	// How long a turn may go without a heartbeat before another worker
	// gets it. Default 30s.
	AckWait Duration `yaml:"ack_wait,omitempty" json:"ack_wait,omitempty"`
	// Caps deliveries of one turn request: past it the worker fails the
	// turn (deliveries_exhausted) instead of running it again. Default 10.
	MaxDeliver int `yaml:"max_deliver,omitempty" json:"max_deliver,omitempty" jsonschema:"minimum=0"`
	// How long a tool call may take before its result is synthesized as an
	// error. Default 60s.
	ToolTimeout Duration `yaml:"tool_timeout,omitempty" json:"tool_timeout,omitempty"`
	// The AckWait of the tool consumers the workers create (tool-<name> on
	// TURN_TOOLS): how long the server waits for word from a tool worker
	// holding a call before it redelivers it. Tool workers heartbeat every
	// third of it, so a dead tool worker's call is answered within about
	// two of it. At least 1s. Default 5s. Use the same value on every
	// worker.
	//
	// Every worker of a deployment should use the same value: the
	// consumers are shared, and the last worker to create one sets it.
	ToolAckWait Duration `yaml:"tool_ack_wait,omitempty" json:"tool_ack_wait,omitempty"`
	// Bounds a graceful shutdown. Default 30s.
	DrainTimeout Duration `yaml:"drain_timeout,omitempty" json:"drain_timeout,omitempty"`
}

// NATS locates the server.
type NATS struct {
	// The server URL(s); NATS_URL and --nats-url override it.
	URL string `yaml:"url,omitempty" json:"url,omitempty"`
	// The first subject token(s) of every turnstream subject. Default
	// "turn".
	Prefix string `yaml:"prefix,omitempty" json:"prefix,omitempty" jsonschema:"pattern=^[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*$"`
	// Replicas of each stream and bucket (JetStream allows 1 to 5).
	// Default (0 or absent): 3 when the server is part of a cluster, 1 on
	// a standalone server.
	Replicas int `yaml:"replicas,omitempty" json:"replicas,omitempty" jsonschema:"minimum=0,maximum=5"`
}

// Duration is a time.Duration written as a Go duration string ("90s", "2m").
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("config: duration %q: %w", b, err)
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes d as a Go duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

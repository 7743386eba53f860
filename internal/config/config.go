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

// Config is a worker's configuration.
type Config struct {
	// Providers are the model services the worker can call.
	Providers []Provider `yaml:"providers" json:"providers"`
	// Models describe each provider's models and their capabilities.
	Models []Model `yaml:"models" json:"models"`
	// Routes map a request's route name to a primary target and fallbacks.
	// A route named "default" serves requests that name none.
	Routes []Route `yaml:"routes" json:"routes"`
	// Budgets are the per-turn defaults and ceilings.
	Budgets Budgets `yaml:"budgets" json:"budgets"`
	// Worker tunes the consume loop.
	Worker Worker `yaml:"worker" json:"worker"`
	// NATS names the server and subject prefix.
	NATS NATS `yaml:"nats" json:"nats"`
	// History tunes prompt assembly.
	History History `yaml:"history" json:"history"`
	// Limits bound what one provider answer and one tool result may bring
	// in.
	Limits Limits `yaml:"limits,omitempty" json:"limits,omitempty"`
}

// Limits bound what the worker takes in from providers and tools.
type Limits struct {
	// Response bounds each provider attempt.
	Response ResponseLimits `yaml:"response,omitempty" json:"response,omitempty"`
	// ToolResult bounds each tool result the worker stores.
	ToolResult ToolResultLimits `yaml:"tool_result,omitempty" json:"tool_result,omitempty"`
}

// ResponseLimits bound one provider attempt, enforced while the answer
// streams so nothing is buffered past them; crossing one fails the attempt
// with RESPONSE_TOO_LARGE, which is not retried on the same target and
// falls back to the next one. Zero fields take the defaults, chosen so
// that whatever passes them can be published with NATS's default 1 MiB
// max payload (1,044,480 bytes of record, 4 KiB being kept for headers):
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
// Raise them together with the server's max_payload. The fields match
// provider.Limits one for one: the worker converts with
// provider.Limits(cfg.Limits.Response).
type ResponseLimits struct {
	// MaxLineBytes caps one SSE line, counted since the last newline.
	// Default 262144 (256 KiB).
	MaxLineBytes int `yaml:"max_line_bytes,omitempty" json:"max_line_bytes,omitempty"`
	// MaxEventBytes caps one SSE event (the bytes of its lines since the
	// last blank line), a non-streamed body, an HTTP error body and every
	// frame relayed. At least MaxLineBytes. Default 262144 (256 KiB).
	MaxEventBytes int `yaml:"max_event_bytes,omitempty" json:"max_event_bytes,omitempty"`
	// MaxStreamBytes caps one answer's event stream. At least
	// MaxEventBytes. Default 67108864 (64 MiB).
	MaxStreamBytes int `yaml:"max_stream_bytes,omitempty" json:"max_stream_bytes,omitempty"`
	// MaxTextBytes caps the visible text. Default 524288 (512 KiB).
	MaxTextBytes int `yaml:"max_text_bytes,omitempty" json:"max_text_bytes,omitempty"`
	// MaxReasoningBytes caps the reasoning. Default 524288 (512 KiB).
	MaxReasoningBytes int `yaml:"max_reasoning_bytes,omitempty" json:"max_reasoning_bytes,omitempty"`
	// MaxToolCalls caps the tool calls of one answer. Default 128.
	MaxToolCalls int `yaml:"max_tool_calls,omitempty" json:"max_tool_calls,omitempty"`
	// MaxArgumentBytes caps one tool call's arguments. Default 262144
	// (256 KiB).
	MaxArgumentBytes int `yaml:"max_argument_bytes,omitempty" json:"max_argument_bytes,omitempty"`
	// MaxMessageBytes caps the finalized assistant message: text and every
	// call's id, name and arguments, counted JSON-escaped. Default 983040
	// (960 KiB).
	MaxMessageBytes int `yaml:"max_message_bytes,omitempty" json:"max_message_bytes,omitempty"`
	// MaxChunks caps the frames relayed. Default 131072.
	MaxChunks int `yaml:"max_chunks,omitempty" json:"max_chunks,omitempty"`
}

// DefaultResponseLimits are the ResponseLimits defaults.
var DefaultResponseLimits = ResponseLimits(provider.DefaultLimits) // declared once, where they are enforced

// ToolResultLimits bound the tool results the worker stores.
type ToolResultLimits struct {
	// MaxBytes caps the content of a stored tool result; a larger result
	// is stored truncated, with a marker saying so and its full size.
	// Default 262144 (256 KiB).
	MaxBytes int `yaml:"max_bytes,omitempty" json:"max_bytes,omitempty"`
	// Redact passes tool results through credential redaction before they
	// are stored (and flags those redacted). Default true.
	Redact *bool `yaml:"redact,omitempty" json:"redact,omitempty"`
}

// DefaultToolResultMaxBytes is the ToolResultLimits.MaxBytes default.
const DefaultToolResultMaxBytes = 256 << 10

// Redacts reports whether tool results are redacted before they are stored.
func (t ToolResultLimits) Redacts() bool { return t.Redact == nil || *t.Redact }

// History tunes prompt assembly.
type History struct {
	// SummaryRoute names a route that summarizes history left out to fit
	// the context window. Default none: a fixed notice says what was left out.
	SummaryRoute string `yaml:"summary_route,omitempty" json:"summary_route,omitempty"`
	// EchoCap bounds the reasoning echo stored per tool-call turn, in bytes.
	// Default history.DefaultEchoCap (65536).
	EchoCap int `yaml:"echo_cap,omitempty" json:"echo_cap,omitempty"`
	// Reserve is the fraction of the context window kept for the answer.
	// Default history.DefaultReserve (0.25).
	Reserve float64 `yaml:"reserve,omitempty" json:"reserve,omitempty"`
}

// Provider is one model service.
type Provider struct {
	// Name identifies the provider in models and routes.
	Name string `yaml:"name" json:"name"`
	// API is the wire API, one of apis.Configurable() (e.g.
	// openai_chat_completions); it brings the capability defaults.
	API API `yaml:"api" json:"api"`
	// BaseURL is the API root, e.g. https://api.openai.com/v1.
	BaseURL string `yaml:"base_url" json:"base_url"`
	// APIKeyEnv names the environment variable holding the key.
	APIKeyEnv string `yaml:"api_key_env,omitempty" json:"api_key_env,omitempty"`
	// APIKeyFile names a file holding the key (surrounding space trimmed).
	APIKeyFile string `yaml:"api_key_file,omitempty" json:"api_key_file,omitempty"`
	// Headers are extra HTTP headers sent with every request (no secrets:
	// use the key settings for credentials).
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
	// IdleTimeout ends a stream that sends no event for this long. Default
	// provider.DefaultIdleTimeout (60s).
	IdleTimeout Duration `yaml:"idle_timeout,omitempty" json:"idle_timeout,omitempty"`
	// Deprecated keeps the provider registered but advertising no models and
	// refusing execution.
	Deprecated bool `yaml:"deprecated,omitempty" json:"deprecated,omitempty"`
	// Capabilities override the api's defaults.
	Capabilities Capabilities `yaml:"capabilities,omitempty" json:"capabilities,omitempty"`
	// Retry is the provider's retry policy.
	Retry Retry `yaml:"retry,omitempty" json:"retry,omitempty"`
	// ToolCallIDFormat is the tool-call id format the provider accepts:
	// "" (up to 40 of [A-Za-z0-9_-]) or "alnum9" (exactly 9 alphanumerics,
	// Mistral). Histories are remapped to it on both sides of each pair.
	ToolCallIDFormat string `yaml:"tool_call_id_format,omitempty" json:"tool_call_id_format,omitempty"`
	// Store, for openai_responses, asks the provider to keep responses so
	// the next request continues from the last one (the durable cursor)
	// instead of replaying history. Default false.
	Store bool `yaml:"store,omitempty" json:"store,omitempty"`
	// Stream, when set to false, asks for one non-streamed response
	// (openai_responses only). Default true.
	Stream *bool `yaml:"stream,omitempty" json:"stream,omitempty"`
	// MaxTokens is every request's output budget, for APIs that send one
	// (anthropic_messages; its default 4096).
	MaxTokens int `yaml:"max_tokens,omitempty" json:"max_tokens,omitempty"`
	// ThinkingBudget turns extended thinking on with this many tokens, for
	// APIs that have it (anthropic_messages: at least 1024, under
	// max_tokens). Default 0: off.
	ThinkingBudget int `yaml:"thinking_budget,omitempty" json:"thinking_budget,omitempty"`
}

// Capabilities override capability defaults; unset fields keep them.
type Capabilities struct {
	Text                 *bool `yaml:"text,omitempty" json:"text,omitempty"`
	Streaming            *bool `yaml:"streaming,omitempty" json:"streaming,omitempty"`
	Tools                *bool `yaml:"tools,omitempty" json:"tools,omitempty"`
	NativeToolHistory    *bool `yaml:"native_tool_history,omitempty" json:"native_tool_history,omitempty"`
	ReasoningEcho        *bool `yaml:"reasoning_echo,omitempty" json:"reasoning_echo,omitempty"`
	StatefulContinuation *bool `yaml:"stateful_continuation,omitempty" json:"stateful_continuation,omitempty"`
	StructuredOutput     *bool `yaml:"structured_output,omitempty" json:"structured_output,omitempty"`
}

// Retry is a retry policy; zero fields take the defaults (normal mode, 2
// retries, 500ms doubling to 10s, 10% jitter); -1 disables retries or jitter.
type Retry struct {
	Mode         string   `yaml:"mode,omitempty" json:"mode,omitempty"`
	MaxRetries   int      `yaml:"max_retries,omitempty" json:"max_retries,omitempty"`
	InitialDelay Duration `yaml:"initial_delay,omitempty" json:"initial_delay,omitempty"`
	MaxDelay     Duration `yaml:"max_delay,omitempty" json:"max_delay,omitempty"`
	Jitter       float64  `yaml:"jitter,omitempty" json:"jitter,omitempty"`
}

// Streams reports whether the provider's requests stream.
func (p Provider) Streams() bool { return p.Stream == nil || *p.Stream }

// Model is one model of a provider.
type Model struct {
	Provider string `yaml:"provider" json:"provider"`
	Name     string `yaml:"name" json:"name"`
	// SupportsTools says the model can call tools. Default true.
	SupportsTools *bool `yaml:"supports_tools,omitempty" json:"supports_tools,omitempty"`
	// ContextTokens is the model's context window. Default 128000.
	ContextTokens int `yaml:"context_tokens,omitempty" json:"context_tokens,omitempty"`
	// Capabilities override the provider's for this model; SupportsTools,
	// when set, wins for tools.
	Capabilities Capabilities `yaml:"capabilities,omitempty" json:"capabilities,omitempty"`
}

// Tools reports whether the model supports tool calls.
func (m Model) Tools() bool { return m.SupportsTools == nil || *m.SupportsTools }

// Route is a named chain of targets: the first is primary, the rest fall back
// in order.
type Route struct {
	Name    string   `yaml:"name" json:"name"`
	Targets []Target `yaml:"targets" json:"targets"`
}

// Target is one provider and model.
type Target struct {
	Provider string `yaml:"provider" json:"provider"`
	Model    string `yaml:"model" json:"model"`
}

func (t Target) String() string { return t.Provider + "/" + t.Model }

// Budgets are the per-turn defaults; Ceiling caps what a request may ask for.
type Budgets struct {
	BudgetValues `yaml:",inline"`
	// Ceiling caps request budgets. Zero fields default to the defaults.
	Ceiling BudgetValues `yaml:"ceiling,omitempty" json:"ceiling,omitempty"`
}

// BudgetValues bound one turn.
type BudgetValues struct {
	// MaxIterations caps provider calls per turn. Default 8.
	MaxIterations int `yaml:"max_iterations,omitempty" json:"max_iterations,omitempty"`
	// MaxToolCalls caps tool calls per turn. Default 16.
	MaxToolCalls int `yaml:"max_tool_calls,omitempty" json:"max_tool_calls,omitempty"`
	// MaxRepeatedToolFailures caps identical failures of one tool. Default 2.
	MaxRepeatedToolFailures int `yaml:"max_repeated_tool_failures,omitempty" json:"max_repeated_tool_failures,omitempty"`
	// WallClock caps a turn's duration. Default 2m.
	WallClock Duration `yaml:"wall_clock,omitempty" json:"wall_clock,omitempty"`
}

// Worker tunes the consume loop.
type Worker struct {
	// Concurrency is how many turns one worker runs at once. Default 64.
	Concurrency int `yaml:"concurrency,omitempty" json:"concurrency,omitempty"`
	// AckWait is how long a turn may go without a heartbeat before another
	// worker gets it. Default bus.DefaultAckWait (30s).
	AckWait Duration `yaml:"ack_wait,omitempty" json:"ack_wait,omitempty"`
	// MaxDeliver caps deliveries of one turn request: past it the worker
	// fails the turn (deliveries_exhausted) instead of running it again.
	// The server caps none (bus.Topology.AckWait says why). Default
	// DefaultMaxDeliver (10).
	MaxDeliver int `yaml:"max_deliver,omitempty" json:"max_deliver,omitempty"`
	// ToolTimeout is how long a tool call may take before its result is
	// synthesized as an error. Default DefaultToolTimeout (60s).
	ToolTimeout Duration `yaml:"tool_timeout,omitempty" json:"tool_timeout,omitempty"`
	// ToolAckWait is the AckWait of the tool consumers the workers create
	// (one per tool, "tool-<name>" on TURN_TOOLS): how long the server
	// waits for word from a tool worker holding a call before it
	// redelivers the call. Tool workers heartbeat every third of it, so a
	// dead tool worker's call is answered (run again, or "tool outcome
	// unknown") within about two of it. At least MinToolAckWait (1s).
	// Default bus.DefaultToolAckWait (5s). Every
	// worker of a deployment should use the same value: the consumers are
	// shared, and the last worker to create one sets it.
	ToolAckWait Duration `yaml:"tool_ack_wait,omitempty" json:"tool_ack_wait,omitempty"`
	// DrainTimeout bounds a graceful shutdown. Default 30s.
	DrainTimeout Duration `yaml:"drain_timeout,omitempty" json:"drain_timeout,omitempty"`
}

// NATS locates the server.
type NATS struct {
	// URL of the server; NATS_URL and --nats-url override it.
	URL string `yaml:"url,omitempty" json:"url,omitempty"`
	// Prefix is the first subject token. Default "turn".
	Prefix string `yaml:"prefix,omitempty" json:"prefix,omitempty"`
	// Replicas of each stream and bucket. Default 0: three when the
	// server is part of a cluster, one on a standalone server
	// (bus.ReplicasFor).
	Replicas int `yaml:"replicas,omitempty" json:"replicas,omitempty"`
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

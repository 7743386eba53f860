package anthropic

import "github.com/turnstream/turnstream/internal/provider"

// API is the wire API this package speaks, as config names it.
const API = "anthropic_messages"

// CallIDFormat is the tool-call id format Messages accepts: tool_use ids
// and tool_use_id match ^[a-zA-Z0-9_-]+$. Prepare remaps a request to it
// itself, so a registration with another format still sends valid ids.
const CallIDFormat = provider.CallIDAnthropic

// DefaultCapabilities are the capabilities that come with the API: text,
// streaming, tools, native tool history (tool_use and tool_result blocks)
// and reasoning echo (an assistant tool-use turn is replayed with its
// signed and redacted thinking blocks, which Anthropic requires while
// thinking is on). No structured output (Prepare sends no output schema)
// and no durable cursor: continuation is turn-local (seed 003), every
// request carries the history it continues.
func DefaultCapabilities() provider.Capabilities {
	return provider.Capabilities{Text: true, Streaming: true, Tools: true, NativeToolHistory: true, ReasoningEcho: true}
}

// EchoReplayable is the echo's replay rule: an assemble.Response.Echo from
// this adapter may be sent back (as provider.Message.Reasoning) only to the
// provider and model that produced it. Signatures are verified by the
// provider that issued them, and another model's thinking is foreign
// reasoning: it is dropped, never replayed.
func EchoReplayable(source, dest provider.Target) bool { return source == dest }

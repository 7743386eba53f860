package anthropic

import "github.com/turnstream/turnstream/internal/provider"

// CallIDFormat is the tool-call id format Messages accepts: tool_use ids
// and tool_use_id match ^[a-zA-Z0-9_-]+$. Prepare remaps a request to it
// itself, so a registration with another format still sends valid ids.
const CallIDFormat = provider.CallIDAnthropic

// EchoName names the API's replay echo: an answer's signed and redacted
// thinking blocks.
const EchoName = "thinking"

// API describes the Messages API. Native tool history is tool_use and
// tool_result blocks. The echo (signed and redacted thinking) is kept with
// every tool-use step and sent back only to the provider and model that
// produced it (signatures are verified by the provider that issued them;
// another model's thinking is foreign reasoning, dropped). It is not
// required (ReasoningEcho off): Anthropic ignores the thinking of earlier
// turns, so a turn another provider answered still replays natively,
// without thinking. With thinking on (a provider's thinking_budget) the
// worker makes it required: Anthropic refuses tool results whose
// assistant message does not open with its thinking, so a step without
// its echo replays flat. No structured output (Prepare sends no output schema)
// and no durable cursor: continuation is turn-local (seed 003), every
// request carries the history it continues.
var API = provider.API{
	Name:         "anthropic_messages",
	System:       "anthropic",
	Doc:          "Anthropic's Messages API: tool_use and tool_result blocks, extended thinking (thinking_budget) replayed with its signatures to the same model, max_tokens per request.",
	Capabilities: provider.Capabilities{Text: true, Streaming: true, Tools: true, NativeToolHistory: true},
	Continuation: provider.ContinueTurnLocal,
	Replay:       provider.Replay{Native: true, Echo: EchoName, EchoSameModel: true},
	Settings:     provider.Settings{MaxTokens: true, Thinking: true},
	CallIDFormat: CallIDFormat,
	New:          provider.Build(New),
	Frames:       NewFrameTranslator,
}

package assemble

import (
	"strings"

	"github.com/turnstream/turnstream/pkg/wire"
)

// NormalizeFinish maps a provider's raw finish reason to the runtime set
// stop|tool_calls|length|content_filter|incomplete|unknown. Error-like values
// never become stop: a provider that ended in error, aborted or ran out of
// resources is incomplete, and anything unrecognized is unknown.
func NormalizeFinish(raw string) string {
	switch strings.ToLower(strings.TrimSpace(raw)) {
	case "stop", "end_turn", "stop_sequence", "eos", "eos_token", "complete", "completed":
		return wire.FinishStop
	case "tool_calls", "function_call", "tool_use":
		return wire.FinishToolCalls
	case "length", "max_tokens", "model_length", "max_output_tokens", "model_context_window_exceeded":
		return wire.FinishLength
	case "content_filter", "safety", "recitation", "refusal", "guardrail_intervened", "blocklist", "prohibited_content", "spii":
		return wire.FinishContentFilter
	case "error", "abort", "aborted", "insufficient_system_resource", "malformed_function_call", "incomplete", "cancelled", "canceled",
		"pause_turn": // Anthropic paused a long turn: not an end, it is resumed by sending the answer back
		return wire.FinishIncomplete
	}
	return wire.FinishUnknown
}

package assemble_test

import (
	"testing"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestNormalizeFinish covers every raw value listed in PROVIDER-QUIRKS.md.
func TestNormalizeFinish(t *testing.T) {
	tests := []struct {
		raw  string
		want string
	}{
		{"stop", wire.FinishStop},
		{"length", wire.FinishLength},
		{"tool_calls", wire.FinishToolCalls},
		{"content_filter", wire.FinishContentFilter},
		{"function_call", wire.FinishToolCalls},
		{"insufficient_system_resource", wire.FinishIncomplete},
		{"model_length", wire.FinishLength},
		{"error", wire.FinishIncomplete},
		{"eos", wire.FinishStop},
		{"eos_token", wire.FinishStop},
		{"stop_sequence", wire.FinishStop},
		{"end_turn", wire.FinishStop},
		{"max_tokens", wire.FinishLength},
		{"tool_use", wire.FinishToolCalls},
		{"refusal", wire.FinishContentFilter},
		{"pause_turn", wire.FinishIncomplete},
		{"model_context_window_exceeded", wire.FinishLength},
		{"STOP", wire.FinishStop},
		{"MAX_TOKENS", wire.FinishLength},
		{"SAFETY", wire.FinishContentFilter},
		{"RECITATION", wire.FinishContentFilter},
		{"MALFORMED_FUNCTION_CALL", wire.FinishIncomplete},
		{"OTHER", wire.FinishUnknown},
		{"COMPLETE", wire.FinishStop},
		{"ERROR", wire.FinishIncomplete},
		{"abort", wire.FinishIncomplete},
		{"guardrail_intervened", wire.FinishContentFilter},
		// Beyond the list: spacing, case, and values never seen.
		{" stop\n", wire.FinishStop},
		{"Tool_Calls", wire.FinishToolCalls},
		{"", wire.FinishUnknown},
		{"null", wire.FinishUnknown},
		{"something_new", wire.FinishUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			if got := assemble.NormalizeFinish(tt.raw); got != tt.want {
				t.Errorf("NormalizeFinish(%q) = %q; want %q", tt.raw, got, tt.want)
			}
		})
	}
}

// TestNormalizeFinishErrorsNeverStop: a provider that failed, aborted or ran
// out of resources must never look like a normal end.
func TestNormalizeFinishErrorsNeverStop(t *testing.T) {
	errorLike := []string{
		"error", "ERROR", "Error", "abort", "aborted", "cancelled", "canceled",
		"insufficient_system_resource", "INSUFFICIENT_SYSTEM_RESOURCE",
		"MALFORMED_FUNCTION_CALL", "malformed_function_call", "incomplete",
		"OTHER", "internal_error", "server_error", "timeout", "failed",
	}
	for _, raw := range errorLike {
		t.Run(raw, func(t *testing.T) {
			if got := assemble.NormalizeFinish(raw); got == wire.FinishStop || got == wire.FinishToolCalls {
				t.Errorf("NormalizeFinish(%q) = %q; want neither stop nor tool_calls", raw, got)
			}
		})
	}
}

// TestNormalizeFinishRange: every result is in the runtime set.
func TestNormalizeFinishRange(t *testing.T) {
	valid := map[string]bool{
		wire.FinishStop: true, wire.FinishToolCalls: true, wire.FinishLength: true,
		wire.FinishContentFilter: true, wire.FinishIncomplete: true, wire.FinishUnknown: true,
	}
	for _, raw := range []string{"stop", "x", "", "\x00", "STOP ", "tool_use", "🙂"} {
		if got := assemble.NormalizeFinish(raw); !valid[got] {
			t.Errorf("NormalizeFinish(%q) = %q; want one of the runtime set", raw, got)
		}
	}
}

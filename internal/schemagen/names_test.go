package schemagen

import "testing"

func TestDefName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Provider", "provider"},
		{"BudgetValues", "budget_values"},
		{"NATS", "nats"},
		{"LLMFinish", "llm_finish"},
		{"LLMRetryStarted", "llm_retry_started"},
		{"ToolResultEvent", "tool_result_event"},
		{"HTTPStatus", "http_status"},
	}
	for _, tt := range tests {
		if got := defName(tt.in); got != tt.want {
			t.Errorf("defName(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestTitle(t *testing.T) {
	tests := []struct{ in, want string }{
		{"input_tokens", "Input tokens"},
		{"http_status", "HTTP status"},
		{"call_id", "Call ID"},
		{"duration_ms", "Duration (ms)"},
		{"base_url", "Base URL"},
		{"nats", "NATS"},
		{"ms", "Ms"},
	}
	for _, tt := range tests {
		if got := title(tt.in); got != tt.want {
			t.Errorf("title(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestTypeDescription(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"TurnAccepted", "TurnAccepted: a worker took the turn.", "A worker took the turn."},
		{"Provider", "Provider is one model service.", "One model service."},
		{"Budgets", "Budgets are the per-turn defaults.", "The per-turn defaults."},
		{"Worker", "Worker tunes the consume loop.", "Tunes the consume loop."},
		{"NATS", "NATS locates the server.", "Locates the server."},
		{"Config", "A worker's configuration.", "A worker's configuration."},
		{"Limits", "Limits Bound things.", "Limits Bound things."},
	}
	for _, tt := range tests {
		if got := typeDescription(tt.name, tt.in); got != tt.want {
			t.Errorf("typeDescription(%q, %q) = %q; want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

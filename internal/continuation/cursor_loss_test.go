package continuation_test

import (
	"slices"
	"testing"

	"github.com/turnstream/turnstream/internal/continuation"
)

func TestOnCursorLoss(t *testing.T) {
	tests := []struct {
		name    string
		pending bool
		want    continuation.LossDecision
	}{
		{
			name: "no pending tool results: degrade and retry with replay",
			want: continuation.LossDecision{EmitDegraded: true, Reason: continuation.ReasonCursorLost, Retry: true},
		},
		{
			name: "pending tool results: degrade and fail without retry", pending: true,
			want: continuation.LossDecision{
				EmitDegraded: true, Reason: continuation.ReasonCursorLost,
				Fail: true, FailReason: continuation.FailReasonToolResultCursorLoss,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := continuation.OnCursorLoss(tt.pending); got != tt.want {
				t.Errorf("OnCursorLoss(%v) = %+v; want %+v", tt.pending, got, tt.want)
			}
		})
	}
}

// TestCursorLossHandler is seed 003's cursor-loss handler pattern: a step
// continued on a cursor the provider has lost, with and without tool
// results waiting to be sent on it.
func TestCursorLossHandler(t *testing.T) {
	tests := []struct {
		name        string
		pending     bool
		wantEvents  []string
		wantCalls   []string // the cursor each provider call sent, "" for replay
		wantRetried bool
	}{
		{
			// Safe: emit continuation_degraded, replay with full history.
			name:       "safe: no pending tool results",
			wantEvents: []string{"continuation_degraded:cursor_lost", "turn_completed"},
			wantCalls:  []string{"resp_1", ""}, wantRetried: true,
		},
		{
			// Unsafe: emit continuation_degraded, emit turn_error, do not retry.
			name: "unsafe: pending tool results", pending: true,
			wantEvents: []string{"continuation_degraded:cursor_lost", "turn_error:tool_result_cursor_loss"},
			wantCalls:  []string{"resp_1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var events, calls []string
			// call is a provider that has lost every cursor: 400
			// previous_response_not_found when one is sent.
			call := func(cursor string) (status int, code, message string) {
				calls = append(calls, cursor)
				if cursor != "" {
					return 400, "previous_response_not_found", "Previous response with id '" + cursor + "' not found."
				}
				return 200, "", ""
			}
			d := continuation.Decide(durable(), responsesTarget("openai"))
			retried := false
			for cursor := d.Cursor; ; cursor = "" {
				status, code, msg := call(cursor)
				if status == 200 {
					events = append(events, "turn_completed")
					break
				}
				if !continuation.IsCursorLoss(status, code, msg) {
					t.Fatalf("IsCursorLoss(%d, %q, %q) = false; want true", status, code, msg)
				}
				loss := continuation.OnCursorLoss(tt.pending)
				if loss.EmitDegraded {
					events = append(events, "continuation_degraded:"+string(loss.Reason))
				}
				if loss.Fail {
					events = append(events, "turn_error:"+loss.FailReason)
					break
				}
				if !loss.Retry || retried {
					t.Fatalf("OnCursorLoss(%v) = %+v after retried = %v; want one retry", tt.pending, loss, retried)
				}
				retried = true
			}
			if !slices.Equal(events, tt.wantEvents) {
				t.Errorf("events = %v; want %v", events, tt.wantEvents)
			}
			if !slices.Equal(calls, tt.wantCalls) {
				t.Errorf("provider calls with cursors %q; want %q", calls, tt.wantCalls)
			}
			if retried != tt.wantRetried {
				t.Errorf("retried = %v; want %v", retried, tt.wantRetried)
			}
		})
	}
}

func TestIsCursorLoss(t *testing.T) {
	tests := []struct {
		name          string
		status        int
		code, message string
		want          bool
	}{
		{"responses 400 code and message", 400, "previous_response_not_found", "Previous response with id 'resp_0f09a275409' not found.", true},
		{"404 code only", 404, "previous_response_not_found", "", true},
		{"code in another case", 400, "Previous_Response_Not_Found", "", true},
		{"in-band stream error with the code", 0, "previous_response_not_found", "", true},
		{"404 message only", 404, "", "Previous response with id 'resp_1' not found.", true},
		{"400 message only", 400, "invalid_request_error", "Previous response with id 'resp_1' not found.", true},
		{"in-band message only", 0, "", "previous response resp_1 not found", true},
		{"invalid previous_response_id", 400, "invalid_request_error", "Invalid `previous_response_id`.", true},
		{"404 model not found", 404, "model_not_found", "The model `gpt-9` does not exist or you do not have access to it.", false},
		{"400 other invalid request", 400, "invalid_value", "Invalid value for 'input'.", false},
		{"500 with a not-found message", 500, "server_error", "Previous response with id 'resp_1' not found.", false},
		{"429", 429, "rate_limit_exceeded", "Rate limit reached.", false},
		{"empty", 0, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := continuation.IsCursorLoss(tt.status, tt.code, tt.message); got != tt.want {
				t.Errorf("IsCursorLoss(%d, %q, %q) = %v; want %v", tt.status, tt.code, tt.message, got, tt.want)
			}
		})
	}
}

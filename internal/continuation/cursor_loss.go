package continuation

import "github.com/turnstream/turnstream/internal/provider"

// FailReasonToolResultCursorLoss is the reason a turn fails with when its
// cursor is lost while tool results wait to be sent on it.
const FailReasonToolResultCursorLoss = "tool_result_cursor_loss"

// LossDecision is what a turn does when the provider has lost its cursor.
type LossDecision struct {
	// EmitDegraded: emit continuation_degraded with Reason. Always true.
	EmitDegraded bool
	// Reason is the degraded event's reason, ReasonCursorLost.
	Reason Reason
	// Retry: retry the step now, replaying the full history without a
	// cursor.
	Retry bool
	// Fail: fail the turn with FailReason and do not retry it.
	Fail bool
	// FailReason is FailReasonToolResultCursorLoss when Fail is set.
	FailReason string
}

// OnCursorLoss decides what a turn does when the provider reports its
// cursor lost. Without pending tool results the step is retried with a
// full replay. With pending tool results the turn fails and is not
// retried: the results answer calls of a response the provider no longer
// has, and running the tools again to rebuild them is not safe.
func OnCursorLoss(pendingToolResults bool) LossDecision {
	d := LossDecision{EmitDegraded: true, Reason: ReasonCursorLost}
	if pendingToolResults {
		d.Fail, d.FailReason = true, FailReasonToolResultCursorLoss
	} else {
		d.Retry = true
	}
	return d
}

// IsCursorLoss reports whether a provider error says the cursor the
// request continued is gone. Its inputs are the HTTP status (0 for an
// error sent inside a stream), the provider's error code and its message,
// which provider.Failure does not keep: the adapter calls this where it
// classifies the error. It recognizes the Responses API's code
// previous_response_not_found at any status, and, with status 0, 400 or
// 404, a message saying the previous response was not found ("Previous
// response with id 'resp_…' not found.") or that previous_response_id is
// invalid.
func IsCursorLoss(status int, code, message string) bool {
	return provider.IsCursorLoss(status, code, message)
}

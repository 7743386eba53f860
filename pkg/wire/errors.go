package wire

import (
	"errors"
	"fmt"
)

// Reject reasons: the coarse, stable enum carried by turn.rejected events and
// by ValidationError.
const (
	ReasonMalformed          = "malformed"
	ReasonContentType        = "unsupported_content_type"
	ReasonInvalidSessionID   = "invalid_session_id"
	ReasonSessionMismatch    = "session_mismatch"
	ReasonInvalidTurnID      = "invalid_turn_id"
	ReasonMissingInput       = "missing_input"
	ReasonInvalidRole        = "invalid_role"
	ReasonInvalidTool        = "invalid_tool"
	ReasonTooLarge           = "too_large"
	ReasonInvalidBudgets     = "invalid_budgets"
	ReasonUnknownRoute       = "unknown_route"
	ReasonDuplicateTurn      = "duplicate_turn"
	ReasonInvalidToolResult  = "invalid_tool_result"
	ReasonInvalidToolRequest = "invalid_tool_call"
)

// ValidationError reports why a record is invalid. Reason is one of the
// Reason constants; Field names the offending field in the record.
type ValidationError struct {
	Reason string
	Field  string
	Detail string
}

func (e *ValidationError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("wire: %s: %s", e.Reason, e.Detail)
	}
	return fmt.Sprintf("wire: %s: %s: %s", e.Reason, e.Field, e.Detail)
}

func invalid(reason, field, format string, args ...any) *ValidationError {
	return &ValidationError{Reason: reason, Field: field, Detail: fmt.Sprintf(format, args...)}
}

// RejectReason returns the Reason of a ValidationError in err's chain, or
// ReasonMalformed for any other error.
func RejectReason(err error) string {
	var ve *ValidationError
	if errors.As(err, &ve) {
		return ve.Reason
	}
	return ReasonMalformed
}

package wire

import (
	"errors"
	"fmt"
	"strings"
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
	// ReasonUnknownField: a strict decoder met a key that names no field
	// of the record exactly (a typo, or a case-insensitive match such as
	// "Session_ID"); Field is its path.
	ReasonUnknownField = "unknown_field"
	// ReasonInvalidSubject: a request arrived on a subject that is not
	// <prefix>.submit.<session> with one valid session token.
	ReasonInvalidSubject = "invalid_subject"
	// ReasonPoison: an earlier delivery of the request died while decoding
	// it, so it is not decoded again.
	ReasonPoison = "poison"
	// ReasonInternal: decoding or validating the request failed
	// unexpectedly (it panicked).
	ReasonInternal = "internal_error"
)

// ErrRecordTooLarge means an encoded record exceeds the server's max
// payload. Writers wrap it; it is never retried, since the same record
// would not fit on a redelivery either.
var ErrRecordTooLarge = errors.New("wire: record exceeds the server's max payload")

// ErrFenced means the server refused a write because its writer lost the
// lease it wrote under (a later delivery of the turn took the session's
// lease). Writers wrap it; the writer must stop writing.
var ErrFenced = errors.New("wire: write fenced: the writer's lease was taken by another")

// ValidationError reports why a record is invalid. Reason is one of the
// Reason constants; Field names the offending field in the record, as a
// path: "input[1].content", "tools[0].parameters.properties.a",
// `payload["a b"]`. A path is ASCII and at most 128 bytes (long keys and
// paths are cut with "..."), so it fits an event payload.
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

// EventField is a ValidationError's Field as an audit event may carry it
// (turn.rejected's "field"): a field name in a request is the sender's
// data, so only the names a path is likely made of are kept: the keys of
// [A-Za-z0-9_$-] of at most 32 bytes, as Field keeps them, and the
// indexes. Every other key (quoted in Field: other characters, or cut) is
// "[?]". The whole Field, bounded the same way but with every key, goes
// on the dead-letter copy (HeaderRejectField) and in the worker's log.
func EventField(field string) string {
	var b strings.Builder
	for i := 0; i < len(field); {
		if strings.HasPrefix(field[i:], `["`) {
			// A quoted key: skip to its closing `"]`, past escapes.
			j := i + 2
			for j < len(field) && field[j] != '"' {
				if field[j] == '\\' {
					j++
				}
				j++
			}
			b.WriteString("[?]")
			i = min(j+2, len(field))
			continue
		}
		b.WriteByte(field[i])
		i++
	}
	out := b.String()
	// A path cut in its middle (Field keeps its ends) may have lost a
	// quote: keep what precedes the first character no key has, and mark
	// the rest unknown.
	if i := strings.IndexFunc(out, func(r rune) bool { return !pathChar(r) }); i >= 0 {
		out = out[:strings.LastIndexAny(out[:i], ".]")+1] + "[?]"
	}
	return out
}

// pathChar reports whether r may stand in an event's field: a plain key's
// characters, the separators and the unknown key's mark.
func pathChar(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("_$-.[]?", r)
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

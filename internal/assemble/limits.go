package assemble

import (
	"strconv"
	"unicode/utf8"
)

// Limits bound what one Assembler accepts, so a response is never buffered
// past them. A zero or negative field is no limit. The operation that would
// cross a limit is refused, the first crossing is kept (Err), and every
// later operation is ignored, as after Terminal.
type Limits struct {
	// TextBytes caps the visible text, summed over text blocks.
	TextBytes int
	// ReasoningBytes caps the reasoning, summed over reasoning blocks.
	ReasoningBytes int
	// ToolCalls caps the number of tool-call blocks.
	ToolCalls int
	// ArgumentBytes caps one tool call's arguments.
	ArgumentBytes int
	// MessageBytes caps what the finalized assistant message carries (the
	// visible text, every call's id, name and arguments, a fixed
	// allowance per call for its normalized id and keys, the raw finish
	// reason and the response id), each counted at the size the record
	// codec (wire.JSON: encoding/json with HTML escaping off) writes it as
	// a JSON string (escapes included: a control byte counts six bytes,
	// '"' two). A response within it fits a message record
	// of that size plus its envelope, in JSON or msgpack.
	MessageBytes int
}

// Names of the limits, as LimitError.Limit reports them.
const (
	LimitTextBytes      = "text_bytes"
	LimitReasoningBytes = "reasoning_bytes"
	LimitToolCalls      = "tool_calls"
	LimitArgumentBytes  = "argument_bytes"
	LimitMessageBytes   = "message_bytes"
)

// callAllowance is what each tool call adds to MessageBytes beside its id,
// name and arguments: its normalized id (at most 64 bytes) and the JSON
// keys and punctuation of a call in a message record.
const callAllowance = 96

// LimitError reports the first limit an Assembler refused to cross. It is
// content-free.
type LimitError struct {
	// Limit is one of the Limit constants.
	Limit string
	// Max is the limit's value.
	Max int
}

func (e *LimitError) Error() string {
	return "assemble: response exceeds " + e.Limit + " (" + strconv.Itoa(e.Max) + ")"
}

// SetLimits bounds what the assembler accepts from now on; call it before
// the first operation.
func (a *Assembler) SetLimits(l Limits) { a.limits = l }

// Err returns the first limit crossed, a *LimitError, or nil.
func (a *Assembler) Err() error {
	if a.err == nil {
		return nil
	}
	return a.err
}

// stopped reports whether the assembler takes no more operations.
func (a *Assembler) stopped() bool { return a.terminal || a.err != nil }

// within reports whether used+n stays within max (no limit when max <= 0),
// recording the crossing of limit otherwise.
func (a *Assembler) within(used, n, max int, limit string) bool {
	if max > 0 && used+n > max {
		a.err = &LimitError{Limit: limit, Max: max}
		return false
	}
	return true
}

// OpaqueReasoning counts n bytes of reasoning the assembler does not hold
// (a provider's encrypted reasoning, kept by its translator) against
// ReasoningBytes. It reports false, and records the crossing, past it.
func (a *Assembler) OpaqueReasoning(n int) bool {
	if a.stopped() || !a.within(a.reasoning, n, a.limits.ReasoningBytes, LimitReasoningBytes) {
		return false
	}
	a.reasoning += n
	return true
}

// charge adds n to the message size, refusing it past MessageBytes.
func (a *Assembler) charge(n int) bool {
	if !a.within(a.message, n, a.limits.MessageBytes, LimitMessageBytes) {
		return false
	}
	a.message += n
	return true
}

// asciiJSON is the size wire.JSON writes each ASCII byte as, within a
// string: control bytes as \u00XX, '"' and '\\' and the short escapes as
// two bytes, anything else as itself ('<', '>' and '&' too: records are
// not HTML-escaped).
var asciiJSON = func() (t [utf8.RuneSelf]uint8) {
	for c := range t {
		switch {
		case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
			t[c] = 2
		case c < 0x20:
			t[c] = 6
		default:
			t[c] = 1
		}
	}
	return t
}()

// jsonSize is the size of s written by wire.JSON as a string, quotes
// left out: invalid UTF-8 becomes \ufffd, U+2028 and U+2029 are escaped.
func jsonSize(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			n += int(asciiJSON[c])
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1, r == '\u2028', r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

package wire

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Role is the author of a message.
type Role string

// Roles of the session log.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Normalized finish reasons.
const (
	FinishStop          = "stop"
	FinishToolCalls     = "tool_calls"
	FinishLength        = "length"
	FinishContentFilter = "content_filter"
	FinishIncomplete    = "incomplete"
	FinishUnknown       = "unknown"
)

// Message is one finalized record of a session log, published on
// Subjects.Message(SessionID). Only workers write it.
type Message struct {
	SessionID string `json:"session_id"`
	TurnID    string `json:"turn_id"`
	// Step is the turn-loop step that produced the message (0 for input).
	Step int `json:"step"`
	// Seq is the message's position in the session log, from 1.
	Seq  uint64 `json:"seq"`
	Role Role   `json:"role"`
	// Content is the visible text. Reasoning never appears here.
	Content string `json:"content"`
	// ToolCalls are the finalized calls of an assistant message, with
	// normalized IDs.
	ToolCalls []Call `json:"tool_calls,omitempty"`
	// ToolCallID correlates a tool message with the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// IsError marks a tool message that reports a failure.
	IsError bool `json:"is_error,omitempty"`
	// Synthesized is true only for explicit repairs (a result the runtime
	// wrote because the tool did not answer), never for real tool output.
	Synthesized bool `json:"synthesized,omitempty"`
	// ContentRedacted marks a tool message whose result held credential
	// material: those spans read "[REDACTED]" in Content. The faithful
	// result is never stored.
	ContentRedacted bool `json:"content_redacted,omitempty"`
	// ContentTruncated marks a tool message whose result was longer than
	// the worker stores (its configured maximum, or what fits in one
	// session-log record): Content is the result's first bytes, cut at a
	// UTF-8 boundary, followed by TruncationMarker, so the model is told.
	ContentTruncated bool `json:"content_truncated,omitempty"`
	// ContentBytes is, for a truncated result, the size in bytes of the
	// whole result before it was cut: as the tool worker counted it when
	// it cut the result, else as the worker counted it after redaction.
	// 0 otherwise.
	ContentBytes int `json:"content_bytes,omitempty"`
	// FinishReason is the normalized finish of an assistant message, and
	// RawFinishReason what the provider sent.
	FinishReason    string `json:"finish_reason,omitempty"`
	RawFinishReason string `json:"raw_finish_reason,omitempty"`
	Provider        string `json:"provider,omitempty"`
	Model           string `json:"model,omitempty"`
	Usage           *Usage `json:"usage,omitempty"`
	// Time is when the worker finalized the message.
	Time time.Time `json:"time"`
}

// Call is a finalized tool call inside an assistant message.
type Call struct {
	// ID is the normalized call ID; results correlate by it.
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the exact JSON text the model produced, unless it held
	// credential material: then the credentials are replaced by
	// "[REDACTED]" and ArgumentsRedacted is set. Secrets are never stored.
	Arguments         string `json:"arguments"`
	ArgumentsRedacted bool   `json:"arguments_redacted,omitempty"`
}

// Usage counts the tokens of one provider call. Input buckets are disjoint:
// InputTokens excludes CachedInputTokens.
type Usage struct {
	InputTokens       int64 `json:"input_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens,omitempty"`
	OutputTokens      int64 `json:"output_tokens"`
	// ReasoningTokens is the part of OutputTokens spent on reasoning.
	ReasoningTokens int64 `json:"reasoning_tokens,omitempty"`
}

// Add accumulates o into u, each count saturating at math.MaxInt64: a
// provider's hostile counts never wrap a turn's total negative.
func (u *Usage) Add(o Usage) {
	add := func(dst *int64, n int64) {
		if n > 0 && *dst > math.MaxInt64-n {
			*dst = math.MaxInt64
			return
		}
		*dst += n
	}
	add(&u.InputTokens, o.InputTokens)
	add(&u.CachedInputTokens, o.CachedInputTokens)
	add(&u.OutputTokens, o.OutputTokens)
	add(&u.ReasoningTokens, o.ReasoningTokens)
}

// Truncation of tool results. A result too long to store is kept as its
// first bytes followed by a marker that tells the reader, the model
// included, how much there was:
//
//	<first M bytes>\n[truncated: the tool returned N bytes; the first M are shown]
//
// The same functions serve the tool workers (pkg/toolworker), which cut a
// result the server would refuse, and the turn workers, which cut it to
// their configured maximum and to what fits in a session-log record.

const (
	markerPrefix = "\n[truncated: the tool returned "
	markerMiddle = " bytes; the first "
	markerSuffix = " are shown]"
)

// ErrContentTooLarge is returned by FitContent when even an empty content
// does not fit: the rest of the record is over the limit.
var ErrContentTooLarge = errors.New("wire: record does not fit even without content")

// TruncationMarker is the text appended to a content cut to its first
// shown bytes out of full.
func TruncationMarker(full, shown int) string {
	return markerPrefix + strconv.Itoa(full) + markerMiddle + strconv.Itoa(shown) + markerSuffix
}

// SplitTruncated splits a content that ends with the marker of an earlier
// truncation into the bytes shown and the full size the marker reports. A
// content without a well-formed marker (one whose shown count is the
// length of what precedes it) is returned whole, with its own length.
// Whoever rewrites a truncated content (a redaction) rewrites the shown
// bytes and marks them again with TruncationMarker(full, len(shown)).
func SplitTruncated(content string) (shown string, full int, isTruncated bool) {
	i := strings.LastIndex(content, markerPrefix)
	if i < 0 || !strings.HasSuffix(content, markerSuffix) {
		return content, len(content), false
	}
	rest := content[i+len(markerPrefix) : len(content)-len(markerSuffix)]
	n, m, ok := strings.Cut(rest, markerMiddle)
	if !ok {
		return content, len(content), false
	}
	whole, err1 := strconv.Atoi(n)
	count, err2 := strconv.Atoi(m)
	if err1 != nil || err2 != nil || count != i || whole < count {
		return content, len(content), false
	}
	return content[:i], whole, true
}

// cutAt returns the longest prefix of s of at most n bytes that ends at a
// UTF-8 boundary.
func cutAt(s string, n int) string {
	if n >= len(s) {
		return s
	}
	if n <= 0 {
		return ""
	}
	// A rune is at most utf8.UTFMax bytes: never step back further.
	for i := n; i > n-utf8.UTFMax && i > 0; i-- {
		if utf8.RuneStart(s[i]) {
			return s[:i]
		}
	}
	return s[:n]
}

// truncated returns body cut to shown bytes (at a UTF-8 boundary) and
// marked with full.
func truncated(body string, full, shown int) string {
	b := cutAt(body, shown)
	return b + TruncationMarker(full, len(b))
}

// TruncateContent cuts a tool result to at most limit bytes, marker
// included: the longest prefix that ends at a UTF-8 boundary and leaves
// room for the marker, then TruncationMarker. It returns the content to
// store, the size of the whole result and whether the content is
// truncated. A content at most limit bytes long is returned as it is.
//
// A content that already ends with the marker of an earlier truncation
// (a tool worker cut it to fit the server's payload limit) is truncated
// again from its shown bytes and keeps the full size the first marker
// reported; it counts as truncated even when it is not cut again.
//
// A limit too small to hold the marker yields the marker alone.
func TruncateContent(content string, limit int) (out string, full int, isTruncated bool) {
	body, full, marked := SplitTruncated(content)
	if len(content) <= limit {
		return content, full, marked
	}
	// The marker for len(body) is at least as long as any shorter one.
	room := limit - len(TruncationMarker(full, len(body)))
	return truncated(body, full, room), full, true
}

// FitContent returns the longest truncation of content, as TruncateContent
// makes it, whose record is at most limit bytes once encoded. size reports
// the encoded size of the record that holds a content; full and isTruncated
// are what the record must report as the content's full size and whether
// it is truncated (the record's flags take room too). A content whose
// record fits is returned as it is.
//
// FitContent encodes a record a bounded number of times (about a dozen),
// each at most limit bytes: it estimates the cut from the first encoding,
// then narrows it by bisection to within 1/512 of the best cut. It returns
// ErrContentTooLarge when even a record without content is over limit.
func FitContent(content string, limit int, size func(content string, full int, isTruncated bool) (int, error)) (out string, full int, isTruncated bool, err error) {
	body, full, marked := SplitTruncated(content)
	whole, err := size(content, full, marked)
	if err != nil {
		return "", 0, false, err
	}
	if whole <= limit {
		return content, full, marked, nil
	}
	try := func(n int) (string, int, error) {
		out := truncated(body, full, n)
		got, err := size(out, full, true)
		return out, got, err
	}
	best, empty, err := try(0)
	if err != nil {
		return "", 0, false, err
	}
	if empty > limit {
		return "", 0, false, fmt.Errorf("%w: at most %d bytes", ErrContentTooLarge, limit)
	}
	// lo is a cut that fits. Every content byte costs at least one encoded
	// byte, so no cut above hi does; the bytes that fitted and the ones
	// that did not give a first estimate, then bisection narrows [lo, hi].
	lo, hi := 0, min(len(body), limit-empty)
	mid := int(int64(limit-empty) * int64(len(body)) / int64(max(1, whole-empty)))
	for lo < hi {
		if mid <= lo || mid > hi {
			if hi-lo <= max(64, hi/512) {
				break
			}
			mid = lo + (hi-lo+1)/2
		}
		out, got, err := try(mid)
		if err != nil {
			return "", 0, false, err
		}
		if got <= limit {
			lo, best = mid, out
		} else {
			hi = mid - 1
		}
		mid = 0
	}
	return best, full, true, nil
}

package wire

import "time"

// ToolCall is one call dispatched to the tool workers of Name, on
// Subjects.Tool(Name), only after the assistant message that made it was
// finalized and persisted.
type ToolCall struct {
	SessionID string `json:"session_id"`
	TurnID    string `json:"turn_id"`
	Step      int    `json:"step"`
	// CallID is the normalized call ID the result must carry back.
	CallID string `json:"call_id"`
	Name   string `json:"name"`
	// Arguments is the exact JSON text the model produced.
	Arguments string `json:"arguments"`
	// Deadline is when the worker stops waiting for the result.
	Deadline time.Time `json:"deadline"`
	// Token is the call's per-call token, issued by the worker that
	// dispatched it: an HMAC over the session, turn, call id and tool name
	// under a key only workers hold. The tool worker copies it unchanged
	// into its result (ToolResult.Token); it is opaque to everyone else.
	Token string `json:"token"`
}

// ToolResult answers a ToolCall, published on Subjects.Result(SessionID).
// The worker awaiting it accepts only a result whose session, turn and
// call id are those of a call it is waiting on and whose token verifies
// for that call; it records any other result of the turn as a
// tool.result-rejected event (EventToolResultRejected) and ignores it.
type ToolResult struct {
	SessionID string `json:"session_id"`
	TurnID    string `json:"turn_id"`
	CallID    string `json:"call_id"`
	// Token is the call's token (ToolCall.Token), copied unchanged. The
	// worker awaiting the result accepts it only if the token is the one
	// it issued for this session, turn, call id and the call's tool.
	Token   string `json:"token"`
	Content string `json:"content"`
	IsError bool   `json:"is_error,omitempty"`
	// ContentTruncated is set by a tool worker that cut Content to fit the
	// server's payload limit (see TruncateContent): Content ends with
	// TruncationMarker, and ContentBytes is the size in bytes of the whole
	// result.
	ContentTruncated bool `json:"content_truncated,omitempty"`
	ContentBytes     int  `json:"content_bytes,omitempty"`
	// Synthesized is set only by the tool-worker SDK (pkg/toolworker) for
	// an explicit repair, such as "tool outcome unknown" for a call whose
	// tool worker died while running it; never for real tool output.
	Synthesized bool `json:"synthesized,omitempty"`
}

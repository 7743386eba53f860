package wire

import "time"

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

// Add accumulates o into u.
func (u *Usage) Add(o Usage) {
	u.InputTokens += o.InputTokens
	u.CachedInputTokens += o.CachedInputTokens
	u.OutputTokens += o.OutputTokens
	u.ReasoningTokens += o.ReasoningTokens
}

package wire

import "time"

// Event types. Payloads hold counts, enums, durations and coarse reasons
// only: never message content, tool arguments or results, reasoning, request
// bodies, credentials, paths or content hashes.
const (
	EventTurnAccepted  = "turn.accepted"
	EventTurnRejected  = "turn.rejected"
	EventTurnCompleted = "turn.completed"
	EventTurnFailed    = "turn.failed"

	EventLLMRequest      = "llm/request"
	EventLLMRetry        = "llm/retry"
	EventLLMRetryStarted = "llm/retry-started"
	EventLLMFallback     = "llm/fallback"
	EventLLMFinish       = "llm/finish"

	EventToolDispatched = "tool.dispatched"
	EventToolResult     = "tool.result"
	EventToolRepaired   = "tool.repaired"

	EventBudgetExceeded = "budget.exceeded"

	// EventTurnContinued: the step continues an answer cut at length.
	EventTurnContinued = "turn.continued"
	// EventStepRetried: a step is retried once because its response could
	// not be used (tool calls cut at length, no visible answer).
	EventStepRetried = "turn.step-retried"

	EventHistorySelected   = "structured-tool-history-selected"
	EventHistoryRepaired   = "structured-tool-history-repaired"
	EventHistorySkipped    = "structured-tool-history-skipped"
	EventHistorySerialized = "structured-tool-history-serialized"

	EventContinuationDegraded = "continuation_degraded"
)

// SessionEvent is one audit record on Subjects.Event(SessionID).
type SessionEvent struct {
	Type      string    `json:"type"`
	SessionID string    `json:"session_id"`
	TurnID    string    `json:"turn_id,omitempty"`
	Step      int       `json:"step,omitempty"`
	Attempt   int       `json:"attempt,omitempty"`
	Time      time.Time `json:"time"`
	// Payload holds counts, enums, durations and coarse reasons only.
	Payload map[string]any `json:"payload,omitempty"`
}

// Terminal reports whether the event ends its turn.
func (e SessionEvent) Terminal() bool {
	switch e.Type {
	case EventTurnCompleted, EventTurnFailed, EventTurnRejected:
		return true
	}
	return false
}

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
	// EventTurnDuplicate: a request resubmitted a turn id that another
	// request owns; it is acked and nothing runs (the turn runs once, from
	// its first request). TurnID is the turn it duplicates. Payload: seq,
	// this request's TURN_SUBMIT sequence, and first_seq, the owning
	// request's (absent when unknown: the turn predates turn records).
	EventTurnDuplicate = "turn.duplicate"

	EventLLMRequest      = "llm/request"
	EventLLMRetry        = "llm/retry"
	EventLLMRetryStarted = "llm/retry-started"
	EventLLMFallback     = "llm/fallback"
	EventLLMFinish       = "llm/finish"

	EventToolDispatched = "tool.dispatched"
	EventToolResult     = "tool.result"
	EventToolRepaired   = "tool.repaired"
	// EventToolResultRejected: a result naming the turn was ignored: its
	// session id is not the turn's, its call id is no pending call of the
	// turn, its call was already answered, or its token does not verify
	// for the call. Payload: reason (one of the ResultRejected constants),
	// and the pending call's tool and call_id when the result names one.
	EventToolResultRejected = "tool.result-rejected"

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

// Reasons of EventToolResultRejected.
const (
	// ResultRejectedWrongSession: the result's session id is not the
	// turn's (it was published on the turn's session subject).
	ResultRejectedWrongSession = "wrong_session"
	// ResultRejectedUnknownCall: its call id is no pending call of the turn.
	ResultRejectedUnknownCall = "unknown_call"
	// ResultRejectedBadToken: its token is missing or is not the one the
	// worker issued for the call (another call's, another session's, made
	// up).
	ResultRejectedBadToken = "bad_token"
	// ResultRejectedDuplicate: the call already has its result.
	ResultRejectedDuplicate = "duplicate"
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

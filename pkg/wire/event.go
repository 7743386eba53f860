package wire

import (
	"errors"
	"fmt"
	"time"
)

// Event types. Payloads hold counts, enums, durations and coarse reasons
// only: never message content, tool arguments or results, reasoning, request
// bodies, credentials, paths or content hashes. Each type has one payload
// type (EventPayload), whose fields are the payload's.
//
// Names. The names below are public and stay as they are, in the styles
// they were given. A new name is "<subject>.<event>": the subject is what
// the event is about (turn, llm, tool, budget, history, continuation), the
// event a past participle or a noun, lower case, words joined by "-" (as
// in tool.result-rejected and turn.step-retried). TestEventNameStyle holds
// every name not listed there to it.
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

// SessionEvent is one audit record on turn.event.<session>, written by
// workers and tool workers. Every decision of the runtime is an event; a
// turn ends with exactly one terminal event (turn.completed, turn.failed,
// or turn.rejected for a request that never ran).
//
// Build one with NewEvent from its typed payload, and read the payload
// back with Decode or DecodePayload.
type SessionEvent struct {
	// What happened: one of the Event constants (the schema lists them as
	// examples), or a type added later, which consumers must tolerate.
	Type string `json:"type" jsonschema:"pattern=^[a-z][a-z0-9_./-]{0\\,63}$"`
	// The session the event is about.
	SessionID string `json:"session_id" jsonschema:"pattern=^[A-Za-z0-9_-]{1\\,128}$"`
	// The turn the event is about, when there is one.
	TurnID string `json:"turn_id,omitempty" jsonschema:"pattern=^[A-Za-z0-9_-]{1\\,128}$"`
	// The turn-loop step, when the event belongs to one.
	Step int `json:"step,omitempty" jsonschema:"minimum=1"`
	// The provider attempt within the step, when the event belongs to one.
	Attempt int `json:"attempt,omitempty" jsonschema:"minimum=1"`
	// When the event happened (RFC 3339).
	Time time.Time `json:"time"`
	// Details of the event: the fields of its type's payload (the
	// EventPayload whose EventType is Type), encoded as a flat object of
	// counts, enums, durations and coarse reasons. Never message content,
	// tool arguments or results, reasoning, provider echo or replay state,
	// request bodies, credentials, paths or content hashes. Keys are
	// snake_case; values are scalars (string, number, integer, boolean) or
	// flat arrays of scalars, never objects or null; strings are at most
	// 128 characters. A type added later has such a payload too.
	Payload map[string]any `json:"payload,omitempty"`
}

// EventPayload is the typed payload of one event type: a flat struct of
// counts, booleans, durations in milliseconds and Enum values (see
// event_payload.go). EventType names the type it is the payload of.
type EventPayload interface {
	EventType() string
}

// ErrUnknownEventType means an event's type has no payload type here: it
// was added after this package was built. Such an event's Payload is still
// readable as it is.
var ErrUnknownEventType = errors.New("wire: unknown event type")

// NewEvent builds the event of payload p: its Type is p.EventType() and
// its Payload p's fields, encoded. turn, step and attempt are zero when
// the event has none; a nil p gives an event without type or payload.
func NewEvent(session, turn string, step, attempt int, at time.Time, p EventPayload) SessionEvent {
	ev := SessionEvent{SessionID: session, TurnID: turn, Step: step, Attempt: attempt, Time: at}
	if p != nil {
		ev.Type, ev.Payload = p.EventType(), encodePayload(p)
	}
	return ev
}

// Decode returns the typed payload of the event: a value of the payload
// type of e.Type (TurnCompleted for turn.completed, and so on). Keys the
// type does not know are ignored and missing ones left zero, so an older
// or newer writer's payload decodes; a value of the wrong kind is an
// error. An event type added later gives an error wrapping
// ErrUnknownEventType.
func (e SessionEvent) Decode() (EventPayload, error) {
	t, ok := payloadTypes[e.Type]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownEventType, e.Type)
	}
	p, err := decodePayload(t, e.Payload)
	if err != nil {
		return nil, fmt.Errorf("wire: %s payload: %w", e.Type, err)
	}
	return p, nil
}

// DecodePayload returns the payload of e as a P; it is an error for e to
// be of another type than P's.
func DecodePayload[P EventPayload](e SessionEvent) (P, error) {
	var zero P
	if e.Type != zero.EventType() {
		return zero, fmt.Errorf("wire: event %q is not %s", e.Type, zero.EventType())
	}
	p, err := e.Decode()
	if err != nil {
		return zero, err
	}
	return p.(P), nil
}

// EventPayloads returns one zero value of every payload type, in the
// order of the event types of the schema.
func EventPayloads() []EventPayload { return append([]EventPayload(nil), payloads...) }

// Terminal reports whether the event ends its turn.
func (e SessionEvent) Terminal() bool {
	switch e.Type {
	case EventTurnCompleted, EventTurnFailed, EventTurnRejected:
		return true
	}
	return false
}

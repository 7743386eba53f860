package wire

// The payload types: one per event type, their fields counts, booleans,
// durations in milliseconds (*_ms) and Enum values, plus the few
// identifiers listed in the audit test with the reason each may be there
// (the provider and model names, the tool name and its normalized call id,
// the provider's request id, the path of a rejected request field). A
// field with omitempty is absent when it does not apply. Each type's doc
// comment and its fields' are the descriptions of the generated
// schemas/session_event.schema.json.

// TurnAccepted: a worker took the turn for this delivery.
type TurnAccepted struct {
	// Whether an earlier delivery already started the turn, so this one
	// resumes it.
	Resumed bool `json:"resumed"`
	// The delivery of the request that runs, from 1.
	Delivery int `json:"delivery"`
	// The request's input messages.
	InputMessages int `json:"input_messages"`
	// The tools the request offers.
	Tools int `json:"tools"`
	// The effective cap on provider calls.
	MaxIterations int `json:"max_iterations"`
	// The effective cap on tool calls.
	MaxToolCalls int `json:"max_tool_calls"`
	// The effective cap on the turn's duration, in milliseconds.
	WallClockMS int64 `json:"wall_clock_ms"`
}

// TurnRejected: the request is invalid; it never ran and was copied to the
// dead-letter subject.
type TurnRejected struct {
	// Why the request was rejected.
	Reason RejectionReason `json:"reason"`
	// The path of the offending field in the request, such as
	// "tools[0].parameters"; it names a field, never its value.
	Field string `json:"field,omitempty" jsonschema:"maxLength=128"`
}

// TurnCompleted: the turn ended with a final answer.
type TurnCompleted struct {
	// Provider steps the turn made.
	Steps int `json:"steps"`
	// Tool calls the turn made.
	ToolCalls int `json:"tool_calls"`
	// Input tokens of every step.
	InputTokens int64 `json:"input_tokens"`
	// The part of input_tokens served from the provider's cache.
	CachedInputTokens int64 `json:"cached_input_tokens"`
	// Output tokens of every step.
	OutputTokens int64 `json:"output_tokens"`
	// The turn's duration, in milliseconds, from its first delivery.
	DurationMS int64 `json:"duration_ms"`
	// The finish reason of the last answer.
	FinishReason FinishReason `json:"finish_reason,omitempty"`
}

// TurnFailed: the turn ended without an answer; reason says why and the
// other fields what was known.
type TurnFailed struct {
	// Why the turn failed.
	Reason FailReason `json:"reason"`
	// The step the turn failed at (0 before the first).
	Step int `json:"step"`
	// The turn's duration, in milliseconds, from its first delivery.
	DurationMS int64 `json:"duration_ms"`
	// The budget that ran out (reason budget_exceeded).
	Budget Budget `json:"budget,omitempty"`
	// The failure class of the provider chain (reason provider_failed) or
	// of the lost cursor.
	Class FailureClass `json:"class,omitempty"`
	// Provider attempts the failed step made.
	Attempts int `json:"attempts,omitempty"`
	// The HTTP status of the last failed attempt.
	HTTPStatus int `json:"http_status,omitempty"`
	// The response limit crossed (class RESPONSE_TOO_LARGE).
	Limit ResponseLimit `json:"limit,omitempty"`
	// Tool calls of the answer cut at length (reason truncated_tool_calls).
	ToolCalls int `json:"tool_calls,omitempty"`
	// The finish reason of the unusable answer (reason unusable_response).
	FinishReason FinishReason `json:"finish_reason,omitempty"`
}

// TurnContinued: the step continues an answer cut at length.
type TurnContinued struct {
	// Why the step continues the previous answer.
	Reason ContinueReason `json:"reason"`
}

// StepRetried: the step is retried once because its answer could not be
// used.
type StepRetried struct {
	// Why the answer could not be used.
	Reason StepRetryReason `json:"reason"`
	// The answer's finish reason.
	FinishReason FinishReason `json:"finish_reason,omitempty"`
	// Tool calls in the answer.
	ToolCalls int `json:"tool_calls"`
}

// LLMAttempt is what every llm/* event says about its provider attempt:
// the target and, when the attempt failed, how.
type LLMAttempt struct {
	// The configured provider name of the attempt's target.
	Provider string `json:"provider" jsonschema:"pattern=^([A-Za-z0-9_.:/@+-]{1\\,64})?$"`
	// The model name of the attempt's target.
	Model string `json:"model" jsonschema:"pattern=^([A-Za-z0-9_.:/@+-]{1\\,64})?$"`
	// The failure class, when the attempt failed.
	Class FailureClass `json:"class,omitempty"`
	// The HTTP status of the failure, when there was one.
	HTTPStatus int `json:"http_status,omitempty"`
	// The provider's request id of the failed attempt, when it sent one.
	RequestID string `json:"request_id,omitempty" jsonschema:"pattern=^[A-Za-z0-9_.:/@+-]{1\\,64}$"`
	// The delay the provider asked for before a retry, in milliseconds.
	ProviderDelayMS int64 `json:"provider_delay_ms,omitempty"`
}

// LLMRequest: an attempt's request is sent to the provider.
type LLMRequest struct {
	LLMAttempt
}

// LLMFinish: an attempt ended, with an answer or a failure.
type LLMFinish struct {
	LLMAttempt
	// The attempt's duration, in milliseconds.
	DurationMS int64 `json:"duration_ms"`
	// How the attempt's chunks end.
	Outcome Marker `json:"outcome"`
	// The answer's normalized finish reason.
	FinishReason FinishReason `json:"finish_reason,omitempty"`
	// Input tokens the provider reported.
	InputTokens int64 `json:"input_tokens,omitempty"`
	// The part of input_tokens served from the provider's cache.
	CachedInputTokens int64 `json:"cached_input_tokens,omitempty"`
	// Output tokens the provider reported.
	OutputTokens int64 `json:"output_tokens,omitempty"`
	// The part of output_tokens spent on reasoning.
	ReasoningTokens int64 `json:"reasoning_tokens,omitempty"`
}

// LLMRetry: a failed attempt is retried on the same target after a delay.
type LLMRetry struct {
	LLMAttempt
	// The target's retry policy.
	Policy RetryMode `json:"policy"`
	// The retry's number on this target, from 1.
	Retry int `json:"retry"`
	// The delay before the retry, in milliseconds.
	DelayMS int64 `json:"delay_ms"`
}

// LLMRetryStarted: a retry's delay is over; its request is sent next.
type LLMRetryStarted struct {
	LLMAttempt
	// The retry's number on this target, from 1.
	Retry int `json:"retry"`
	// The delay waited, in milliseconds.
	DelayMS int64 `json:"delay_ms"`
}

// LLMFallback: the route moves on to its next target, because this one
// failed (class) or could not serve the request (skipped).
type LLMFallback struct {
	LLMAttempt
	// Why the target could not serve the request, when it was skipped.
	Skipped SkipReason `json:"skipped,omitempty"`
	// The configured provider name of the next target.
	ToProvider string `json:"to_provider" jsonschema:"pattern=^([A-Za-z0-9_.:/@+-]{1\\,64})?$"`
	// The model name of the next target.
	ToModel string `json:"to_model" jsonschema:"pattern=^([A-Za-z0-9_.:/@+-]{1\\,64})?$"`
}

// ToolCallRef names the tool call a tool.* event is about.
type ToolCallRef struct {
	// The tool's name.
	Tool string `json:"tool" jsonschema:"pattern=^([A-Za-z0-9_.:/@+-]{1\\,64})?$"`
	// The call's normalized id.
	CallID string `json:"call_id" jsonschema:"pattern=^[A-Za-z0-9_-]{1\\,128}$"`
}

// ToolDispatched: a tool call was published to its tool workers.
type ToolDispatched struct {
	ToolCallRef
	// How long the worker waits for the result, in milliseconds.
	DeadlineMS int64 `json:"deadline_ms"`
}

// ToolResultEvent is the payload of tool.result (ToolResult is the record
// it is about): a call got its result, from its tool worker or, for a call
// the turn loop refused to dispatch, from the runtime.
type ToolResultEvent struct {
	ToolCallRef
	// Whether the result is an error.
	IsError bool `json:"is_error"`
	// Why the call was not dispatched, when it was refused.
	PlanningError PlanningError `json:"planning_error,omitempty"`
	// The time from dispatch to result, in milliseconds.
	DurationMS int64 `json:"duration_ms"`
	// Whether credential material was redacted from the stored content.
	ContentRedacted bool `json:"content_redacted"`
	// Whether the stored content was cut to the tool-result limit.
	ContentTruncated bool `json:"content_truncated"`
	// The content's size in bytes, as the tool worker sent it.
	ContentBytes int `json:"content_bytes"`
}

// ToolResultRejected: a result naming the turn was ignored.
type ToolResultRejected struct {
	// Why the result was ignored.
	Reason ResultRejection `json:"reason"`
	// The pending call's tool, when the result names a pending call.
	Tool string `json:"tool,omitempty" jsonschema:"pattern=^([A-Za-z0-9_.:/@+-]{1\\,64})?$"`
	// The pending call's normalized id, when the result names one.
	CallID string `json:"call_id,omitempty" jsonschema:"pattern=^[A-Za-z0-9_-]{1\\,128}$"`
}

// ToolRepaired: a call got an explicit, synthesized error result.
type ToolRepaired struct {
	ToolCallRef
	// Why the call was repaired.
	Reason RepairReason `json:"reason"`
}

// BudgetExceeded: a budget ran out; the turn ends with turn.failed.
type BudgetExceeded struct {
	// The budget that ran out.
	Budget Budget `json:"budget"`
	// Provider steps the turn made.
	Steps int `json:"steps"`
	// Tool calls the turn made.
	ToolCalls int `json:"tool_calls"`
	// Identical failures of one tool in a row.
	RepeatedToolFailures int `json:"repeated_tool_failures"`
	// The turn's duration, in milliseconds.
	DurationMS int64 `json:"duration_ms"`
	// The effective cap on provider calls.
	MaxIterations int `json:"max_iterations"`
	// The effective cap on tool calls.
	MaxToolCalls int `json:"max_tool_calls"`
	// The effective cap on identical failures of one tool.
	MaxRepeatedToolFailures int `json:"max_repeated_tool_failures"`
	// The effective cap on the turn's duration, in milliseconds.
	WallClockMS int64 `json:"wall_clock_ms"`
}

// HistorySelected: the history the step's target got.
type HistorySelected struct {
	// The configured provider name of the serving target.
	Provider string `json:"provider" jsonschema:"pattern=^([A-Za-z0-9_.:/@+-]{1\\,64})?$"`
	// The model name of the serving target.
	Model string `json:"model" jsonschema:"pattern=^([A-Za-z0-9_.:/@+-]{1\\,64})?$"`
	// Whether tool history was replayed natively.
	Native bool `json:"native"`
	// Whether the request continued a provider-kept response instead of
	// replaying history.
	Cursor bool `json:"cursor"`
	// History units sent.
	SelectedUnits int `json:"selected_units"`
	// History units left out to fit the context window.
	DroppedUnits int `json:"dropped_units"`
	// Whether a summary stands for the units left out.
	Summary bool `json:"summary"`
}

// HistoryRepaired: calls without a result got a placeholder result in the
// replayed history.
type HistoryRepaired struct {
	// Calls that got a placeholder.
	PlaceholderCalls int `json:"placeholder_calls"`
}

// HistorySkipped: history was replayed as flat text instead of natively,
// for the whole destination (a gate) or for some turns.
type HistorySkipped struct {
	// Why native replay was skipped.
	Reason HistorySkipReason `json:"reason"`
	// Tool groups replayed as flat text, for a gate.
	FlatGroups int `json:"flat_groups,omitempty"`
	// Turns kept off native replay for this reason.
	Turns int `json:"turns,omitempty"`
}

// HistorySerialized: the shape of a native replay.
type HistorySerialized struct {
	// Call and result pairs replayed natively.
	NativePairs int `json:"native_pairs"`
	// Tool groups replayed as flat text.
	FlatGroups int `json:"flat_groups"`
	// Replay echoes sent back to the provider.
	Echoes int `json:"echoes"`
	// Messages of the request.
	Messages int `json:"messages"`
}

// ContinuationDegraded: a stored continuation cursor was not used; the
// history is replayed instead.
type ContinuationDegraded struct {
	// Why the cursor was not used.
	Reason DegradedReason `json:"reason"`
	// The configured provider name of the target.
	Provider string `json:"provider,omitempty" jsonschema:"pattern=^([A-Za-z0-9_.:/@+-]{1\\,64})?$"`
	// The model name of the target.
	Model string `json:"model,omitempty" jsonschema:"pattern=^([A-Za-z0-9_.:/@+-]{1\\,64})?$"`
}

// TurnDuplicate: a request resubmitted a turn id that another request
// owns; it is acked without running the turn again.
type TurnDuplicate struct {
	// The stream sequence of the duplicate request.
	Seq uint64 `json:"seq"`
	// The stream sequence of the request that owns the turn, when known.
	FirstSeq uint64 `json:"first_seq,omitempty"`
}

func (TurnAccepted) EventType() string         { return EventTurnAccepted }
func (TurnDuplicate) EventType() string        { return EventTurnDuplicate }
func (TurnRejected) EventType() string         { return EventTurnRejected }
func (TurnCompleted) EventType() string        { return EventTurnCompleted }
func (TurnFailed) EventType() string           { return EventTurnFailed }
func (TurnContinued) EventType() string        { return EventTurnContinued }
func (StepRetried) EventType() string          { return EventStepRetried }
func (LLMRequest) EventType() string           { return EventLLMRequest }
func (LLMFinish) EventType() string            { return EventLLMFinish }
func (LLMRetry) EventType() string             { return EventLLMRetry }
func (LLMRetryStarted) EventType() string      { return EventLLMRetryStarted }
func (LLMFallback) EventType() string          { return EventLLMFallback }
func (ToolDispatched) EventType() string       { return EventToolDispatched }
func (ToolResultEvent) EventType() string      { return EventToolResult }
func (ToolResultRejected) EventType() string   { return EventToolResultRejected }
func (ToolRepaired) EventType() string         { return EventToolRepaired }
func (BudgetExceeded) EventType() string       { return EventBudgetExceeded }
func (HistorySelected) EventType() string      { return EventHistorySelected }
func (HistoryRepaired) EventType() string      { return EventHistoryRepaired }
func (HistorySkipped) EventType() string       { return EventHistorySkipped }
func (HistorySerialized) EventType() string    { return EventHistorySerialized }
func (ContinuationDegraded) EventType() string { return EventContinuationDegraded }

// payloads holds one value of each payload type, in the order the schema
// lists them.
var payloads = []EventPayload{
	TurnAccepted{}, TurnRejected{}, TurnCompleted{}, TurnFailed{}, TurnContinued{}, StepRetried{}, TurnDuplicate{},
	LLMRequest{}, LLMFinish{}, LLMRetry{}, LLMRetryStarted{}, LLMFallback{},
	ToolDispatched{}, ToolResultEvent{}, ToolResultRejected{}, ToolRepaired{},
	BudgetExceeded{},
	HistorySelected{}, HistoryRepaired{}, HistorySkipped{}, HistorySerialized{},
	ContinuationDegraded{},
}

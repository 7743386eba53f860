package wire

// Enum is implemented by the named string types of event payload fields:
// Values lists every value such a field holds, in the order the schema
// lists them. Readers should tolerate a value added later.
type Enum interface {
	Values() []string
}

// RejectionReason is why a turn request was rejected (turn.rejected): one
// of the Reason constants, which ValidationError.Reason carries too.
type RejectionReason string

// Values lists the Reason constants.
func (RejectionReason) Values() []string {
	return []string{
		ReasonMalformed, ReasonContentType, ReasonInvalidSessionID, ReasonSessionMismatch,
		ReasonInvalidTurnID, ReasonMissingInput, ReasonInvalidRole, ReasonInvalidTool,
		ReasonTooLarge, ReasonInvalidBudgets, ReasonUnknownRoute, ReasonDuplicateTurn,
		ReasonInvalidToolResult, ReasonInvalidToolRequest, ReasonUnknownField,
		ReasonInvalidSubject, ReasonPoison, ReasonInternal,
	}
}

// FailReason is why a turn failed (turn.failed).
type FailReason string

// Reasons a turn fails.
const (
	// FailProvider: the route's provider chain failed; the payload's class
	// says how.
	FailProvider FailReason = "provider_failed"
	// FailCancelled: a client cancelled the turn.
	FailCancelled FailReason = "cancelled"
	// FailBudget: a budget ran out; the payload's budget names it.
	FailBudget FailReason = "budget_exceeded"
	// FailTruncatedCalls: the model's tool calls were cut at length twice.
	FailTruncatedCalls FailReason = "truncated_tool_calls"
	// FailNoAnswer: the model gave no visible answer twice.
	FailNoAnswer FailReason = "no_visible_answer"
	// FailUnusableResponse: the answer's finish reason leaves nothing to
	// use.
	FailUnusableResponse FailReason = "unusable_response"
	// FailDeliveriesExhausted: every delivery of the turn died without
	// ending it.
	FailDeliveriesExhausted FailReason = "deliveries_exhausted"
	// FailInternal: running the turn panicked.
	FailInternal FailReason = "internal_error"
	// FailRecordTooLarge: a record of the turn exceeds the server's max
	// payload.
	FailRecordTooLarge FailReason = "record_too_large"
	// FailToolResultCursorLoss: the provider lost the response that tool
	// results were waiting to continue.
	FailToolResultCursorLoss FailReason = "tool_result_cursor_loss"
)

// Values lists the FailReason constants.
func (FailReason) Values() []string {
	return enumValues(FailProvider, FailCancelled, FailBudget, FailTruncatedCalls, FailNoAnswer,
		FailUnusableResponse, FailDeliveriesExhausted, FailInternal, FailRecordTooLarge,
		FailToolResultCursorLoss)
}

// Budget names a turn budget (budget.exceeded, turn.failed).
type Budget string

// Budgets, named as the request's budget fields.
const (
	BudgetMaxIterations           Budget = "max_iterations"
	BudgetMaxToolCalls            Budget = "max_tool_calls"
	BudgetMaxRepeatedToolFailures Budget = "max_repeated_tool_failures"
	BudgetWallClock               Budget = "wall_clock"
)

// Values lists the Budget constants.
func (Budget) Values() []string {
	return enumValues(BudgetMaxIterations, BudgetMaxToolCalls, BudgetMaxRepeatedToolFailures, BudgetWallClock)
}

// FailureClass is the coarse class of a failed provider attempt, as
// llm/* and turn.failed events and attempt markers (Chunk.Failure) carry it.
type FailureClass string

// Failure classes.
const (
	ClassRateLimit        FailureClass = "RATE_LIMIT"
	ClassServer           FailureClass = "SERVER"
	ClassTimeout          FailureClass = "TIMEOUT"
	ClassTransport        FailureClass = "TRANSPORT"
	ClassMalformed        FailureClass = "MALFORMED_RESPONSE"
	ClassStreamClosed     FailureClass = "STREAM_CLOSED"
	ClassEmpty            FailureClass = "EMPTY_RESPONSE"
	ClassAuth             FailureClass = "AUTH"
	ClassQuota            FailureClass = "QUOTA"
	ClassPayment          FailureClass = "PAYMENT"
	ClassTooLarge         FailureClass = "REQUEST_TOO_LARGE"
	ClassInvalidRequest   FailureClass = "INVALID_REQUEST"
	ClassProvider         FailureClass = "PROVIDER_ERROR"
	ClassCancelled        FailureClass = "CANCELLED"
	ClassNoRoute          FailureClass = "NO_ROUTE"
	ClassUnsupported      FailureClass = "UNSUPPORTED"
	ClassDeprecated       FailureClass = "DEPRECATED_PROVIDER"
	ClassInvalidCall      FailureClass = "INVALID_PREPARED_CALL"
	ClassIncomplete       FailureClass = "INCOMPLETE_RESPONSE"
	ClassResponseTooLarge FailureClass = "RESPONSE_TOO_LARGE"
	ClassCursorLost       FailureClass = "CURSOR_LOST"
)

// Values lists the FailureClass constants.
func (FailureClass) Values() []string {
	return enumValues(ClassRateLimit, ClassServer, ClassTimeout, ClassTransport, ClassMalformed,
		ClassStreamClosed, ClassEmpty, ClassAuth, ClassQuota, ClassPayment, ClassTooLarge,
		ClassInvalidRequest, ClassProvider, ClassCancelled, ClassNoRoute, ClassUnsupported,
		ClassDeprecated, ClassInvalidCall, ClassIncomplete, ClassResponseTooLarge, ClassCursorLost)
}

// ResponseLimit names the per-attempt limit a RESPONSE_TOO_LARGE failure
// crossed.
type ResponseLimit string

// Response limits.
const (
	LimitLineBytes      ResponseLimit = "sse_line_bytes"
	LimitEventBytes     ResponseLimit = "sse_event_bytes"
	LimitBodyBytes      ResponseLimit = "body_bytes"
	LimitStreamBytes    ResponseLimit = "stream_bytes"
	LimitTextBytes      ResponseLimit = "text_bytes"
	LimitReasoningBytes ResponseLimit = "reasoning_bytes"
	LimitToolCalls      ResponseLimit = "tool_calls"
	LimitArgumentBytes  ResponseLimit = "argument_bytes"
	LimitMessageBytes   ResponseLimit = "message_bytes"
	LimitChunks         ResponseLimit = "chunks"
	LimitFrameBytes     ResponseLimit = "frame_bytes"
)

// Values lists the ResponseLimit constants.
func (ResponseLimit) Values() []string {
	return enumValues(LimitLineBytes, LimitEventBytes, LimitBodyBytes, LimitStreamBytes, LimitTextBytes,
		LimitReasoningBytes, LimitToolCalls, LimitArgumentBytes, LimitMessageBytes, LimitChunks, LimitFrameBytes)
}

// Marker is how a provider attempt ended: one of the Marker constants
// (llm/finish's outcome, and the attempt's marker chunk).
type Marker string

// Values lists the Marker constants.
func (Marker) Values() []string { return []string{MarkerCompleted, MarkerRetrying, MarkerFailed} }

// FinishReason is a normalized finish reason: one of the Finish constants.
type FinishReason string

// Values lists the Finish constants.
func (FinishReason) Values() []string {
	return []string{FinishStop, FinishToolCalls, FinishLength, FinishContentFilter, FinishIncomplete, FinishUnknown}
}

// RetryMode names a provider's retry policy (llm/retry).
type RetryMode string

// Retry modes.
const (
	// RetryNormal retries EMPTY_RESPONSE, RATE_LIMIT, SERVER, TIMEOUT and
	// TRANSPORT up to the policy's retry count.
	RetryNormal RetryMode = "normal"
	// RetryAlways retries every request failure until success or
	// cancellation.
	RetryAlways RetryMode = "always"
	// RetryNever does not retry.
	RetryNever RetryMode = "never"
)

// Values lists the RetryMode constants.
func (RetryMode) Values() []string { return enumValues(RetryNormal, RetryAlways, RetryNever) }

// SkipReason is why a route's target could not serve a request, so the
// chain fell back without calling it (llm/fallback).
type SkipReason string

// Skip reasons.
const (
	SkipDeprecatedProvider SkipReason = "deprecated_provider"
	SkipUnknownProvider    SkipReason = "unknown_provider"
	SkipUnknownModel       SkipReason = "unknown_model"
	SkipNoText             SkipReason = "no_text"
	SkipNoTools            SkipReason = "no_tools"
	SkipNoStreaming        SkipReason = "no_streaming"
	SkipPrepareFailed      SkipReason = "prepare_failed"
)

// Values lists the SkipReason constants.
func (SkipReason) Values() []string {
	return enumValues(SkipDeprecatedProvider, SkipUnknownProvider, SkipUnknownModel, SkipNoText,
		SkipNoTools, SkipNoStreaming, SkipPrepareFailed)
}

// PlanningError is why the turn loop refused a tool call before
// dispatching it (tool.result).
type PlanningError string

// Planning errors.
const (
	// PlanningUnknownTool: the call names a tool the request did not offer.
	PlanningUnknownTool PlanningError = "unknown_tool"
	// PlanningInvalidArguments: the arguments do not match the tool's
	// parameter schema.
	PlanningInvalidArguments PlanningError = "invalid_arguments"
)

// Values lists the PlanningError constants.
func (PlanningError) Values() []string {
	return enumValues(PlanningUnknownTool, PlanningInvalidArguments)
}

// ResultRejection is why a tool result was ignored (tool.result-rejected):
// one of the ResultRejected constants.
type ResultRejection string

// Values lists the ResultRejected constants.
func (ResultRejection) Values() []string {
	return []string{ResultRejectedWrongSession, ResultRejectedUnknownCall, ResultRejectedBadToken, ResultRejectedDuplicate}
}

// RepairReason is why a tool call got a synthesized error result
// (tool.repaired).
type RepairReason string

// Repair reasons.
const (
	// RepairDeadlineExceeded: no result came before the tools' deadline.
	RepairDeadlineExceeded RepairReason = "deadline_exceeded"
	// RepairClosedUnexecuted: the turn ended (a budget, a failure, a
	// cancellation) with the call not run.
	RepairClosedUnexecuted RepairReason = "closed_unexecuted"
)

// Values lists the RepairReason constants.
func (RepairReason) Values() []string {
	return enumValues(RepairDeadlineExceeded, RepairClosedUnexecuted)
}

// ContinueReason is why a step continues the previous answer
// (turn.continued).
type ContinueReason string

// ContinueLength: the previous answer was cut at length.
const ContinueLength ContinueReason = "length"

// Values lists the ContinueReason constants.
func (ContinueReason) Values() []string { return enumValues(ContinueLength) }

// StepRetryReason is why a step is retried once (turn.step-retried).
type StepRetryReason string

// Step retry reasons.
const (
	// StepRetryTruncatedCalls: the answer's tool calls were cut at length.
	StepRetryTruncatedCalls StepRetryReason = "truncated_tool_calls"
	// StepRetryNoAnswer: the answer had nothing visible.
	StepRetryNoAnswer StepRetryReason = "no_visible_answer"
)

// Values lists the StepRetryReason constants.
func (StepRetryReason) Values() []string {
	return enumValues(StepRetryTruncatedCalls, StepRetryNoAnswer)
}

// HistorySkipReason is why history was not replayed natively
// (structured-tool-history-skipped): a gate of the destination, or a
// turn's replay-safety problem.
type HistorySkipReason string

// History skip reasons.
const (
	// HistorySkipAPIMode: the target's API has no native tool history.
	HistorySkipAPIMode HistorySkipReason = "api_mode"
	// HistorySkipProviderMetadata: the target's capabilities turn native
	// tool history off.
	HistorySkipProviderMetadata HistorySkipReason = "provider_metadata"
	// HistorySkipModelTools: the target's model cannot call tools.
	HistorySkipModelTools HistorySkipReason = "model_tools"
	// HistorySkipCredential: a turn's tool group holds credential material.
	HistorySkipCredential HistorySkipReason = "credential_material"
	// HistorySkipRedacted: a turn's call arguments were stored redacted.
	HistorySkipRedacted HistorySkipReason = "arguments_redacted"
	// HistorySkipMalformed: a turn's tool group is not well formed.
	HistorySkipMalformed HistorySkipReason = "malformed_group"
	// HistorySkipMissingEcho: a turn lacks the replay echo the target
	// requires.
	HistorySkipMissingEcho HistorySkipReason = "missing_echo"
	// HistorySkipOversizedEcho: a turn's replay echo is over the echo cap.
	HistorySkipOversizedEcho HistorySkipReason = "oversized_echo"
)

// Values lists the HistorySkipReason constants.
func (HistorySkipReason) Values() []string {
	return enumValues(HistorySkipAPIMode, HistorySkipProviderMetadata, HistorySkipModelTools,
		HistorySkipCredential, HistorySkipRedacted, HistorySkipMalformed, HistorySkipMissingEcho,
		HistorySkipOversizedEcho)
}

// DegradedReason is why a stored continuation cursor was not used
// (continuation_degraded).
type DegradedReason string

// Degraded reasons.
const (
	DegradedNoState             DegradedReason = "no_state"
	DegradedStatelessLoop       DegradedReason = "stateless_loop"
	DegradedNoCursor            DegradedReason = "no_cursor"
	DegradedProviderChanged     DegradedReason = "provider_changed"
	DegradedModelChanged        DegradedReason = "model_changed"
	DegradedModeChanged         DegradedReason = "mode_changed"
	DegradedSystemPromptChanged DegradedReason = "system_prompt_changed"
	DegradedToolsetChanged      DegradedReason = "toolset_changed"
	DegradedNoCursorSupport     DegradedReason = "no_cursor_support"
	DegradedCursorLost          DegradedReason = "cursor_lost"
)

// Values lists the DegradedReason constants.
func (DegradedReason) Values() []string {
	return enumValues(DegradedNoState, DegradedStatelessLoop, DegradedNoCursor, DegradedProviderChanged,
		DegradedModelChanged, DegradedModeChanged, DegradedSystemPromptChanged, DegradedToolsetChanged,
		DegradedNoCursorSupport, DegradedCursorLost)
}

// enumValues converts enum constants to their values.
func enumValues[E ~string](values ...E) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

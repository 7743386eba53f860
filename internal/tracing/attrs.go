package tracing

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// Span names.
const (
	SpanTurn = "turn"
	// SpanAbort is a turn's end without a run: its deliveries exhausted,
	// a run that panicked or could not store a record.
	SpanAbort = "turn.abort"
	SpanStep  = "step"
	// SpanChat prefixes an attempt's span name: "chat <model>".
	SpanChat = "chat"
	// SpanToolCall prefixes the turn worker's span of a call:
	// "tool_call <tool>".
	SpanToolCall = "tool_call"
	// SpanExecuteTool prefixes the tool worker's span of a call:
	// "execute_tool <tool>".
	SpanExecuteTool = "execute_tool"
)

// turnstream's own attribute keys.
const (
	KeySession  = attribute.Key("turnstream.session_id")
	KeyTurn     = attribute.Key("turnstream.turn_id")
	KeyDelivery = attribute.Key("turnstream.delivery")
	KeyResumed  = attribute.Key("turnstream.resumed")
	KeyStep     = attribute.Key("turnstream.step")
	KeyAttempt  = attribute.Key("turnstream.attempt")
	KeyRoute    = attribute.Key("turnstream.route")
	// KeyProvider is the provider's configured name (gen_ai.provider.name
	// is its API's maker).
	KeyProvider = attribute.Key("turnstream.provider")
	KeyMarker   = attribute.Key("turnstream.marker")
	KeyOutcome  = attribute.Key("turnstream.outcome")
	KeyReason   = attribute.Key("turnstream.reason")
	KeyIsError  = attribute.Key("turnstream.is_error")
	KeyDuration = attribute.Key("turnstream.duration_ms")
	// KeySystem is gen_ai.system, the older name of gen_ai.provider.name
	// that many trace backends still read.
	KeySystem = attribute.Key("gen_ai.system")
	// KeyPurpose marks an attempt that is no step's: "history_summary".
	KeyPurpose = attribute.Key("turnstream.purpose")
)

// GenAI semantic-convention keys and values used here.
var (
	KeyOperation         = semconv.GenAIOperationNameKey
	KeyProviderName      = semconv.GenAIProviderNameKey
	KeyRequestModel      = semconv.GenAIRequestModelKey
	KeyInputTokens       = semconv.GenAIUsageInputTokensKey
	KeyOutputTokens      = semconv.GenAIUsageOutputTokensKey
	KeyCachedInputTokens = semconv.GenAIUsageCacheReadInputTokensKey
	KeyFinishReasons     = semconv.GenAIResponseFinishReasonsKey
	KeyToolName          = semconv.GenAIToolNameKey
	KeyToolCallID        = semconv.GenAIToolCallIDKey
	KeyConversation      = semconv.GenAIConversationIDKey
	KeyErrorType         = semconv.ErrorTypeKey
)

// Operation names (gen_ai.operation.name).
var (
	OpChat        = semconv.GenAIOperationNameChat.Value.AsString()
	OpExecuteTool = semconv.GenAIOperationNameExecuteTool.Value.AsString()
)

// Turn is the attributes of a turn's delivery span.
func Turn(session, turn string, delivery int) []attribute.KeyValue {
	return []attribute.KeyValue{
		KeySession.String(session), KeyConversation.String(session), KeyTurn.String(turn),
		KeyDelivery.Int(delivery),
	}
}

// ToolCall is the attributes of a call's spans, on both sides (only the
// tool worker's is the GenAI execute_tool operation).
func ToolCall(session, turn string, step int, tool, callID string) []attribute.KeyValue {
	return []attribute.KeyValue{
		KeySession.String(session), KeyTurn.String(turn), KeyStep.Int(step),
		KeyToolName.String(tool), KeyToolCallID.String(callID),
	}
}

// End ends span with an outcome: ok, or failed with errType (an enum: a
// class or a reason, never a message's text) as error.type and the span's
// error status.
func End(span trace.Span, failed bool, errType string, attrs ...attribute.KeyValue) {
	span.SetAttributes(attrs...)
	if failed {
		if errType != "" {
			span.SetAttributes(KeyErrorType.String(errType))
		}
		span.SetStatus(codes.Error, errType)
	}
	span.End()
}

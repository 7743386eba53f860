package turn_test

import (
	"slices"
	"testing"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/continuation"
	"github.com/turnstream/turnstream/internal/history"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/turn"
	"github.com/turnstream/turnstream/pkg/wire"
)

// The turn loop copies values of other packages' constants into typed
// payload fields; each value must be one its wire.Enum lists, or the
// event it is in fails the published schema.
func TestPayloadValuesAreWireEnums(t *testing.T) {
	tests := []struct {
		enum   wire.Enum
		values []string
	}{
		{wire.FailReason(""), []string{
			turn.ReasonProvider, turn.ReasonCancelled, turn.ReasonBudget, turn.ReasonTruncatedCalls,
			turn.ReasonNoAnswer, turn.ReasonUnusableResponse, turn.ReasonExhausted, turn.ReasonInternal,
			turn.ReasonTooLarge, continuation.FailReasonToolResultCursorLoss,
		}},
		{wire.Budget(""), []string{turn.BudgetIterations, turn.BudgetToolCalls, turn.BudgetRepeatedFailures, turn.BudgetWallClock}},
		{wire.FailureClass(""), names(
			provider.ClassRateLimit, provider.ClassServer, provider.ClassTimeout, provider.ClassTransport,
			provider.ClassMalformed, provider.ClassStreamClosed, provider.ClassEmpty, provider.ClassAuth,
			provider.ClassQuota, provider.ClassPayment, provider.ClassTooLarge, provider.ClassInvalidRequest,
			provider.ClassProvider, provider.ClassCancelled, provider.ClassNoRoute, provider.ClassUnsupported,
			provider.ClassDeprecated, provider.ClassInvalidCall, provider.ClassIncomplete,
			provider.ClassResponseTooLarge, provider.ClassCursorLost,
		)},
		{wire.ResponseLimit(""), []string{
			provider.LimitLineBytes, provider.LimitEventBytes, provider.LimitBodyBytes, provider.LimitStreamBytes,
			assemble.LimitTextBytes, assemble.LimitReasoningBytes, assemble.LimitToolCalls,
			assemble.LimitArgumentBytes, assemble.LimitMessageBytes, provider.LimitChunks, provider.LimitFrameBytes,
		}},
		{wire.RetryMode(""), []string{
			provider.RetryPolicy{Mode: provider.RetryNormal}.Key(), provider.RetryPolicy{Mode: provider.RetryAlways}.Key(),
			provider.RetryPolicy{Mode: provider.RetryNever}.Key(), provider.RetryPolicy{}.Key(),
		}},
		{wire.SkipReason(""), []string{
			provider.SkipDeprecated, provider.SkipUnknown, provider.SkipUnknownModel, provider.SkipNoText,
			provider.SkipNoTools, provider.SkipNoStreaming, provider.SkipPrepareFailed,
		}},
		{wire.HistorySkipReason(""), []string{
			history.SkipAPIMode, history.SkipProviderMeta, history.SkipModelTools, history.SkipCredential,
			history.SkipRedacted, history.SkipMalformed, history.SkipMissingEcho, history.SkipOversizedEcho,
		}},
		{wire.DegradedReason(""), names(
			continuation.ReasonNoState, continuation.ReasonStatelessLoop, continuation.ReasonNoCursor,
			continuation.ReasonProviderChanged, continuation.ReasonModelChanged, continuation.ReasonModeChanged,
			continuation.ReasonSystemPromptChanged, continuation.ReasonToolsetChanged,
			continuation.ReasonNoCursorSupport, continuation.ReasonCursorLost,
		)},
	}
	for _, tt := range tests {
		allowed := tt.enum.Values()
		for _, v := range tt.values {
			if !slices.Contains(allowed, v) {
				t.Errorf("%q is not a %T value (%v): add it to pkg/wire", v, tt.enum, allowed)
			}
		}
	}
}

func names[S ~string](values ...S) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

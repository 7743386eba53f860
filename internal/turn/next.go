package turn

import (
	"github.com/turnstream/turnstream/internal/history"
	"github.com/turnstream/turnstream/pkg/wire"
)

// actionKind is what the loop does next.
type actionKind uint8

const (
	// actFinish: the last assistant message answered; the turn completes.
	actFinish actionKind = iota + 1
	// actCloseCalls: the calls would spend more than the tool-call budget:
	// close them unexecuted and end the turn on the budget.
	actCloseCalls
	// actRunTools: run the pending calls.
	actRunTools
	// actExceeded: a budget is spent; end the turn on it.
	actExceeded
	// actStep: ask the provider for the next step.
	actStep
)

// action is the loop's next move.
type action struct {
	kind   actionKind
	calls  []wire.Call // actCloseCalls, actRunTools
	budget string      // actCloseCalls, actExceeded
}

// next decides the loop's next move from what the turn has durably done
// and its budgets. It is pure: the loop's writes follow from it, so a
// resumed delivery decides exactly as the one before it would have.
func next(st history.TurnState, b Budgets) action {
	if st.Done() {
		return action{kind: actFinish}
	}
	if pending := st.Pending(); len(pending) > 0 {
		if st.ToolCalls > b.MaxToolCalls {
			return action{kind: actCloseCalls, calls: pending, budget: BudgetToolCalls}
		}
		return action{kind: actRunTools, calls: pending}
	}
	if st.Last != nil && len(st.Last.ToolCalls) > 0 && st.RepeatedFailures() > b.MaxRepeatedToolFailures {
		return action{kind: actExceeded, budget: BudgetRepeatedFailures}
	}
	if st.Steps >= b.MaxIterations {
		return action{kind: actExceeded, budget: BudgetIterations}
	}
	return action{kind: actStep}
}

package turn

import "fmt"

// The runtime's own words. Each is deterministic: the same situation always
// reads the same, so clients and tests can rely on it, and none of them
// carries provider output.
const (
	// continueInstruction is sent (never persisted) after an answer cut at
	// length, as the last message of the next request.
	continueInstruction = "Your previous answer was cut off because it reached the output limit. Continue it exactly where it stopped, without repeating anything."
	// answerInstruction is sent (never persisted) after a response with no
	// visible answer: the prefill that asks for one.
	answerInstruction = "You have not given a visible answer yet. Reply now with your final answer as plain text."
	// truncatedRefusal is persisted when tool calls were cut at length twice.
	truncatedRefusal = "I could not complete this request: my tool call was cut off before its arguments were complete, twice, so no tool was run. Please try again with a smaller request."
	// noAnswerGuidance is persisted when a response stayed without a visible
	// answer after the retry.
	noAnswerGuidance = "I could not produce a visible answer to this request. Please try again, or rephrase it."
	// filteredNotice is persisted when a content filter left no text.
	filteredNotice = "The provider's content filter stopped this answer."
)

// budgetMessage is the visible message of a turn that hit a budget.
func budgetMessage(budget string, b Budgets) string {
	switch budget {
	case BudgetIterations:
		return fmt.Sprintf("I stopped before finishing: this turn reached its limit of %d model calls.", b.MaxIterations)
	case BudgetToolCalls:
		return fmt.Sprintf("I stopped before finishing: this turn reached its limit of %d tool calls, so the last ones were not run.", b.MaxToolCalls)
	case BudgetRepeatedFailures:
		return fmt.Sprintf("I stopped before finishing: a tool failed the same way more than %d times.", b.MaxRepeatedToolFailures)
	case BudgetWallClock:
		return fmt.Sprintf("I stopped before finishing: this turn reached its time limit of %s.", b.WallClock)
	}
	return "I stopped before finishing: this turn reached a limit."
}

package toolworker

import "time"

// Observer sees what Serve does, for metrics and readiness (WithObserver):
// where each tool's consumer binding stands, and how each delivered call
// ended. Its methods are called from Serve's goroutines, concurrently, and
// must be cheap and must not block. They are given tool names and enums
// only, never a call's arguments, result or identifiers.
type Observer interface {
	// ToolState reports that the binding of tool's consumer is now s.
	ToolState(tool string, s ToolState)
	// CallDone reports how a delivered call of tool ended and how long
	// its handling took, from its delivery to its settlement (claim,
	// handler, result, ack).
	CallDone(tool string, outcome CallOutcome, took time.Duration)
}

// ToolState is where the binding of a tool's consumer stands.
type ToolState uint8

const (
	// ToolWaiting: the tool's consumer does not exist yet. The workers
	// create it at the tool's first call, which Serve then binds within
	// a second (the call waits in the work queue meanwhile): the state of
	// a tool worker ready for calls no turn has made yet.
	ToolWaiting ToolState = iota + 1
	// ToolBound: bound to its consumer, fetching calls.
	ToolBound
	// ToolUnbound: binding or fetching failed (the claims bucket is
	// missing because no worker has started, the server is unreachable, a
	// permission is refused); Serve binds again.
	ToolUnbound
)

// String names the state.
func (s ToolState) String() string {
	switch s {
	case ToolWaiting:
		return "waiting"
	case ToolBound:
		return "bound"
	case ToolUnbound:
		return "unbound"
	}
	return "unknown"
}

// CallOutcome is how a delivered call ended (Observer.CallDone).
type CallOutcome string

const (
	// CallOK: the handler's result is published, and the call acked.
	CallOK CallOutcome = "ok"
	// CallError: the handler's result, an error result (is_error: the
	// handler returned an error or panicked, or said so), is published.
	CallError CallOutcome = "error"
	// CallUnknown: the call's claimer died (or the drain cut it short)
	// and its tool is not idempotent: OutcomeUnknownContent is published.
	CallUnknown CallOutcome = "unknown"
	// CallReplayed: a redelivered call answered from its claim's recorded
	// result; the handler did not run.
	CallReplayed CallOutcome = "replayed"
	// CallRetry: the call was handed back (shutting down, left to a live
	// claimer, or a write failed) and will be delivered again.
	CallRetry CallOutcome = "retry"
	// CallRejected: an invalid call (it does not decode, fails
	// validation, or names another tool), terminated without a result.
	CallRejected CallOutcome = "rejected"
	// CallExpired: a call whose deadline passed before it was answered,
	// terminated without a result (the turn worker wrote a timeout
	// result).
	CallExpired CallOutcome = "expired"
)

// observers fans Serve's reports out to every Observer given.
type observers []Observer

func (os observers) ToolState(tool string, s ToolState) {
	for _, o := range os {
		o.ToolState(tool, s)
	}
}

func (os observers) CallDone(tool string, outcome CallOutcome, took time.Duration) {
	for _, o := range os {
		o.CallDone(tool, outcome, took)
	}
}

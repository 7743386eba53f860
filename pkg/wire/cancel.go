package wire

// Cancel asks the workers to stop a turn of a session. It is published
// with core NATS (no stream) on Subjects.Cancel(session).
//
// A cancel naming a turn (TurnID) is durable: every worker that receives
// it stops the turn if it runs it, and stores the cancel, so a turn that
// no worker runs at that moment (queued behind its session's earlier turn,
// between deliveries, or still in TURN_SUBMIT) ends turn.failed with reason
// "cancelled" when a worker picks it up, and its provider is never called.
// A cancel of a turn that already ended changes nothing.
//
// An empty body or an empty TurnID cancels whichever turns of the session
// are running at that moment, and nothing else: it is not stored.
//
// Sent as a request (with a reply subject), it is answered by every worker
// that received it, once the cancel is stored (or, without a TurnID, once
// the running turns were cancelled): an empty message, with
// HeaderCancelError set if that worker could not store it.
type Cancel struct {
	TurnID string `json:"turn_id,omitempty"`
}

// CancelNotStored is the HeaderCancelError value of a worker's answer to a
// Cancel it could not store.
const CancelNotStored = "not_stored"

// Package turn is the turn loop (the ProviderTurnLoop of the seeds): what
// happens between a validated TurnRequest and its one terminal event. It
// appends the input, builds each step's provider request from the session
// log, runs the provider executor, relays chunks, finalizes the assistant
// message, normalizes tool-call ids once, persists before it executes,
// plans and dispatches tool calls only after finalization, correlates their
// results by normalized id, and stops within budgets.
//
// Each dispatched call carries a per-call token (internal/calltoken, keyed
// by the fleet key in Loop.CallKey), and a result is accepted only if it
// names a pending call of the turn, in the turn's session, with that
// call's token: a tool worker answers only calls it received. Every other
// result naming the turn is ignored and recorded as tool.result-rejected;
// results of other turns of the session (late ones of earlier turns) are
// ignored silently.
//
// Tool schemas come from any client: they compile in a sandbox (no loader,
// only in-document references; size, depth, node, pattern and fan-in
// limits checked iteratively first; a per-worker cache by content,
// SchemaCache), and each check of a call's arguments is bounded before it
// runs. Planning errors name the argument's place and the rule, never its
// value. Tool results are redacted of credentials, then cut to the
// configured maximum and to one record, with a marker the model reads.
//
// A turn cancelled before a delivery ran it (Delivery.Cancelled, or its
// context cancelled with ErrCancelled while it waited for the lease) ends
// turn.failed "cancelled" under the lease, without a provider call, like a
// turn cancelled while it runs.
//
// The loop is a state machine over the durable session log: everything a
// step decides is derived from finalized messages, so a turn redelivered to
// another worker resumes where the last one stopped instead of starting
// over. It knows nothing of JetStream; it writes through the Writer it is
// given and never acks, naks or terminates a request (internal/worker does).
package turn

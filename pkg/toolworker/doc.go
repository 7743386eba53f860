// Package toolworker is the SDK with which a tool author serves named tools
// from any process: Serve binds to the durable pull consumer of each tool
// on the TURN_TOOLS work queue, claims each call in the TURN_CLAIMS bucket,
// runs the author's Handler within the call's deadline, records the result
// in the claim, publishes it as a ToolResult on the session's result
// subject in the call's encoding, and only then acks. A result carries the
// Nats-Msg-Id "result:<base64url(sha256(token))>", so a redelivered
// call cannot store a second result within the stream's duplicate window.
//
// # Call tokens
//
// Every call carries a per-call token (wire.ToolCall.Token) that the
// worker dispatching it signed with a key only workers hold. Every result
// Serve publishes carries the token of the call it answers, copied
// unchanged: a result the handler returned, one answered from the call's
// claim, and the synthesized "tool outcome unknown" result alike. The
// worker awaiting the result accepts it only with that token, so a tool
// worker can answer only the calls it received; results without it are
// rejected (a tool.result-rejected event) and the call times out. Serve
// never checks, logs or invents a token; a call without one is invalid
// and terminated unrun.
//
// # Consumers
//
// The turnstream workers create each tool's consumer ("tool-<name>",
// filtered on turn.tool.<name>) before they dispatch the tool's first call,
// and the TURN_CLAIMS bucket when they start; tool workers never create or
// change consumers, buckets or streams. Serve waits for them: it polls the
// consumer's info (backing off up to a second) and logs once that it waits
// for the workers to create it at the tool's first call. That first call
// waits in the work queue meanwhile. A consumer no tool worker pulls from
// for an hour is removed by the server and made again at the tool's next
// call; a Serve that loses its consumer waits for it the same way.
//
// # Exactly-once tool effects
//
// A call is claimed before its handler runs, under the key
// "<tool>.<session>.<turn>.<base64url(call_id)>" (bus.ClaimKey; it starts
// with the tool so that permissions can confine a tool worker to its tools'
// claims). The claim is a
// JSON record: its state (running or done), the Serve that holds it (a
// process-unique owner id) with the delivery and attempt, the holder's
// heartbeat interval, and once done the result (content, is_error,
// content_truncated, content_bytes, synthesized). It only advances by
// compare-and-set on its revision. While the handler runs, its tool worker
// acks progress on the call and renews the claim (a new revision) every
// heartbeat; a renewal that finds the claim taken over cancels the
// handler's context, and that run never publishes. On completion the claim
// is marked done with the result first, then the result is published, then
// the call is acked; a result too large for the server's max payload is
// cut (wire.FitContent) to what both the claim and the published result
// can hold, so the two are identical.
//
// A later delivery of the call (a redelivery after a crash or a lost ack,
// or the same call dispatched again) reads the claim:
//   - done: it publishes the recorded result (deduplicated by the message
//     id) and acks; the handler never runs again;
//   - running: it keeps its delivery in progress and watches the claim's
//     revision for 2.5 of the holder's heartbeat intervals. If it moves, the
//     holder is alive: the delivery is handed back (after an AckWait) and
//     left to it. If not, the holder died or is stopped: the delivery takes
//     the claim over by compare-and-set, and runs the call again if its tool
//     was declared idempotent (WithIdempotent); otherwise it does not run
//     it, marks the claim done with the error result OutcomeUnknownContent,
//     is_error and synthesized, publishes that and acks. A holder that wakes
//     after a takeover finds its claim moved and publishes nothing.
//
// # Heartbeats and AckWait
//
// The tool consumers' AckWait is set by the workers that create them
// (worker config worker.tool_ack_wait, default 5s, at least 1s) and read
// by Serve from the consumer's info: heartbeats (progress acks and claim
// renewals) go out every third of it, and at least four times before the
// call's deadline, so a dead tool worker's call is redelivered about one
// AckWait later and answered within about two, long before the turn
// worker's deadline for it.
//
// # Observing
//
// WithObserver gives an Observer each tool's binding state (waiting for
// its consumer, bound, unbound) and each delivered call's outcome (ok,
// error, unknown, replayed, retry, rejected, expired) with how long its
// handling took: what metrics and a readiness probe need. It is given tool
// names and enums only. turnstream's `tools` command counts them as
// turnstream_tool_calls_total and turns ready once every tool is bound or
// waiting for its consumer.
//
// WithTracerProvider traces each delivered call as an OpenTelemetry span,
// "execute_tool <tool>", the child of the turn worker's span of the call:
// the call's message headers carry its W3C trace context (traceparent).
// The handler's context holds the span. Its attributes name the tool, the call id, the session, the
// turn and the outcome, never arguments or results.
//
// Logs: Info for what a healthy tool worker does (a call answered, a
// call left to its live claimer, a hand-back at shutdown), Warn for what
// redelivery repairs (a claim or result write that failed, an invalid
// call terminated, a claimer found dead), Error for what needs a look (a
// result that does not encode, a handler that panicked).
//
// # Discovery
//
// Serve registers the process as the NATS service turnstream-tools
// (nats.go/micro; WithDiscovery turns it off), so `nats micro ls`, `nats
// micro info turnstream-tools` and `nats micro stats turnstream-tools`
// list every tool worker, a tool author's own processes included: its
// version (WithVersion; default the binary's build info), the owner id its
// claims carry, the subject prefix, and an endpoint on
// <prefix>.svc.tools.config answering a JSON summary of the tools served
// and the options (tool names, subjects, consumers, which are idempotent,
// concurrency, drain timeout; no handler, argument, result or
// credential). STATS shows each tool's binding state and its calls by
// outcome. The service stops when Serve returns. Its user needs to
// subscribe to $SRV.*, $SRV.*.turnstream-tools, $SRV.*.turnstream-tools.*
// and the config subject, and to answer requests (deploy/nats); a
// registration the server refuses is logged at warn and changes nothing
// else.
//
// It owns the tool side of the wire contract: decoding and validating calls,
// claiming them, heartbeating long runs, bounding concurrency, recovering
// panics and draining in-flight calls on shutdown. It must not create or
// change streams, consumers or buckets (the turnstream workers own the
// topology; Serve waits for it), must not write anything but results,
// claims and its service's answers, and must never log tool arguments,
// results or tokens.
package toolworker

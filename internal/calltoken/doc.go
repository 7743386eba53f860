// Package calltoken signs and verifies the per-call tokens of tool calls.
//
// A worker gives every tool call it dispatches a token: an HMAC-SHA256,
// keyed by the fleet key all workers share, over the call's session, turn,
// call id and tool name. A tool worker copies the call's token into its
// result unchanged, and the worker awaiting the result accepts it only if
// the token verifies for the call it is waiting on. A tool worker thus
// answers only calls it received: it cannot forge a token for another
// session's call, another call of the same turn, or another tool's call.
//
// The package only computes and compares tokens. It must not store, log or
// print a key: where the fleet key lives, and how it is created, is
// internal/bus's business (bus.State.CallTokenKey).
package calltoken

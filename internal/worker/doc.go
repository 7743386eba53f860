// Package worker is the consume loop: it pulls turn requests from the
// shared durable consumer in batches sized to its free concurrency, decides
// once per delivery whether to ack, nak or terminate, keeps long turns alive
// with heartbeats (one loop for all of them), starts a session's turns in submission order and never
// overlaps them, routes cancel requests to running turns, and drains
// gracefully: stop taking work, let in-flight turns finish within a
// deadline, hand the rest back for another worker to resume.
//
// A delivery waits for three round trips before its provider call: the
// session is read while the request decodes under its intake guard, the
// lease is taken while the guard is released, and the turn's record, input
// messages and first request facts are awaited together
// (BenchmarkTurnRoundTrips counts them).
//
// It also guards intake: each request decodes under its heartbeat, inside
// an intake guard in TURN_STATE that dead-letters a request whose earlier
// delivery died while decoding it (reason "poison"), with large requests
// decoding a few at a time; a panic while decoding rejects the request and a
// panic in a turn fails it, so no request can crash every worker in turn.
//
// Turn decisions live in internal/turn and NATS details in internal/bus;
// this package wires them and owns every message's disposition.
package worker

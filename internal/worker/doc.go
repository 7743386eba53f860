// Package worker is the consume loop: it pulls turn requests from the
// shared durable consumer in batches sized to its free concurrency, decides
// once per delivery whether to ack, nak or terminate, keeps long turns alive
// with heartbeats (one loop for all of them), starts a session's turns in submission order and never
// overlaps them, routes cancel requests to running turns and stores them
// for turns not running (see below), and drains
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
// Cancels are durable. Every worker subscribes to the cancel subjects (no
// queue group), so a cancel reaches the worker running its turn, which
// stops it; each worker also stores a cancel that names a turn
// (bus.State.StoreCancel: a bounded list per session in TURN_STATE, the
// first write wins) and answers a cancel sent as a request once it is
// stored. A delivery registers its cancel function, then reads the stored
// cancels (in parallel with the lease take: no added wait), and a cancelled
// turn ends turn.failed "cancelled" under its lease before any provider
// call (turn.Delivery.Cancelled). A handler looks for running turns again
// after its store, so a cancel that a delivery's read missed finds its
// registration. A turn that ends cancelled removes its stored cancel; a
// cancel without a turn id stops running turns only and is not stored.
//
// Ready reports whether the worker can take turns (connected, topology
// ensured, bound to the submit consumer with its last fetch answered, not
// draining): the /readyz of `turnstream worker --metrics-addr`. Ready,
// InFlight (the deliveries it holds) and Instance (the id its leases name)
// are what the turnstream-worker NATS service reports (internal/discovery,
// registered by the commands that run a worker, not here). With
// Options.Metrics the worker counts its deliveries, turns, provider calls
// and publish acks (internal/metrics) through the executor it gives the
// loop, its settle and reject paths and the bus's ack options. A settled
// delivery logs once, at info for a turn that completed (or was
// cancelled by its client), warn for one that failed or a delivery that
// could not finish, error for a turn that failed internally.
//
// Turn decisions live in internal/turn and NATS details in internal/bus;
// this package wires them and owns every message's disposition.
package worker

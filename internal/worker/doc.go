// Package worker is the consume loop: it pulls turn requests from the
// shared durable consumer in batches sized to its free concurrency, decides
// once per delivery whether to ack, nak or terminate, keeps long turns alive
// with heartbeats, starts a session's turns in submission order and never
// overlaps them, routes cancel requests to running turns, and drains
// gracefully: stop taking work, let in-flight turns finish within a
// deadline, hand the rest back for another worker to resume.
//
// Turn decisions live in internal/turn and NATS details in internal/bus;
// this package wires them and owns every message's disposition.
package worker

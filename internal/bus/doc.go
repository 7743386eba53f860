// Package bus is everything in turnstream that knows JetStream: the streams
// and consumers of the public topology (created idempotently; each tool's
// consumer just before the tool's first call is dispatched, since workers,
// never tool workers, create consumers), an embedded server for dev and
// demo, the per-turn writer that publishes chunks, raw provider frames,
// events, messages and tool calls, the session reader, the tool-result
// follower, and the worker-only state, where the fleet's call-token key
// lives (State.CallTokenKey) and the cancels of turns no worker ran yet are
// stored (State.StoreCancel, at most MaxStoredCancels per session).
//
// A turn's bookkeeping costs a few round trips, whatever the session's
// length. ReadSession reads a session's log, its TURN_STATE entries and its
// head in one round trip (batch direct gets, no consumer), and a worker
// keeps what it read, so the next read of the session reads only what was
// stored since (session.go). Take advances the session lease from that
// read; after a release it keeps the released holder's fence markers
// instead of writing new ones (lease.go). The turn's independent writes are
// pipelined and awaited once (pipeline.go).
//
// It owns publish semantics (chunks, raw frames and events are published
// asynchronously and their acks awaited once per step; messages are
// appended with fencing and idempotent message IDs) but makes no turn
// decisions: it never calls a provider and never interprets content.
package bus

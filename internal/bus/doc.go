// Package bus is everything in turnstream that knows JetStream: the streams
// and consumers of the public topology (created idempotently; each tool's
// consumer just before the tool's first call is dispatched, since workers,
// never tool workers, create consumers), an embedded server for dev and
// demo, the per-turn writer that publishes chunks, raw provider frames,
// events, messages and tool calls, the session-log reader, the tool-result
// follower, and the worker-only state, where the fleet's call-token key
// lives (State.CallTokenKey).
//
// It owns publish semantics (chunks, raw frames and events are published
// asynchronously and their acks awaited once per step; messages are
// appended with expected-sequence fencing and idempotent message IDs) but
// makes no turn decisions: it never calls a provider and never interprets
// content.
package bus

// Package replay re-runs a recorded turn offline (`turnstream replay`):
// it reads the turn's record from the server it ran on (the session log,
// the turn's audit events, its raw provider frames and attempt markers, and
// the worker-only state of the session's earlier turns), derives one
// scripted provider call per recorded attempt (LLM-REPLAY-DERIVATION,
// internal/provider/scripted), and runs the turn again through the real
// worker and turn loop on an embedded NATS server seeded with the session
// as it was when the turn started. The worker's only adapter is the
// scripted one, and its tool calls are answered from the recorded tool
// results, so no provider is called and no tool runs again. It prints the
// replayed turn as `turnstream demo` does (internal/console) and compares
// it with the recording (Compare): its messages and the sequence of its
// event types.
//
// It must not write to the server the turn ran on: there it only reads,
// with direct gets and the short-lived ordered consumers scripted.Load
// reads with. Everything the replay writes goes to its own embedded server,
// removed when it returns.
//
// A recording does not keep the request's system prompt or tool schemas:
// the replayed request offers the tools the model called, without schemas
// (the scripted adapter ignores the request body, so the provider's
// answers are the recorded ones whatever the prompt). A call the recorded
// turn refused for its arguments' schema replays as dispatched, and shows
// as a divergence.
package replay

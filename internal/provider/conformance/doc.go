// Package conformance is the suite every provider adapter must pass, in
// the style of Watermill's pubsub/tests: each adapter's tests call Run with
// a Subject naming its wire dialect and how to build it, and get the same
// cases as every other adapter.
//
// Cases are abstract transcripts written from PROVIDER-QUIRKS.md and seed
// 004 (the adversarial stream: two interleaved tool calls, a metadata
// frame, a close before one call completes; then valid completion,
// malformed arguments, every finish variant, every usage placement, a
// refusal as visible text, in-band
// errors, 429 with each kind of retry hint, a stall of comments only, a
// mid-stream disconnect; then each per-attempt limit crossed, and met),
// and from the shapes of Anthropic Messages streams (calls one after the
// other, a call cut by max_tokens, signed and redacted thinking, an
// in-stream overloaded error, 529, ping keep-alives, refusal and
// pause_turn stops). A Dialect renders each transcript in its wire API's
// shape and internal/mockllm serves it over real HTTP and SSE; a dialect
// that cannot express a transcript leaves that case out of its list rather
// than skipping it.
//
// The suite owns the expectations, not the adapters: it knows nothing of
// any adapter's internals.
package conformance

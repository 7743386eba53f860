// Package mockllm is an OpenAI- and Anthropic-compatible server speaking
// real SSE, for Chat Completions (/v1/chat/completions), the Responses API
// (/v1/responses, streamed or not) and Anthropic Messages (/v1/messages),
// driven by scripts: text, parallel tool calls with split arguments,
// reasoning (signed thinking for Messages), usage, per-chunk latency, faults
// (HTTP errors with retry hints, in-band errors, stalls, truncation,
// disconnects), and hostile floods generated as they are written, each
// bounded by a size or a count and stopped when the client hangs up (Flood:
// an endless line, data lines without a blank line, huge text, reasoning,
// frames, arguments or bodies, thousands of tool calls). It is the provider
// of `turnstream demo` and `dev`, and every test's fake: tests fake
// providers only at this HTTP boundary.
//
// Without a script it behaves well enough for a demo: it calls the offered
// tools when the last message is from the user, and answers with text that
// uses the tool results otherwise. It records every request body it
// received, so tests can assert on exactly what a provider was sent.
package mockllm

// Package openaichat is the adapter for the Chat Completions API of OpenAI
// and every "compatible" server. It serializes a provider.Request into a
// request body, sends it through openaiwire's openai-go transport (explicit
// base URL and key, SDK retries off: the executor owns retries, an idle
// timeout only events reset) with openai-go's SSE framing, and translates
// each chunk, whatever quirks its server has, into operations on an
// assemble.Assembler.
//
// The translator is wire-specific but rule-based, never vendor-specific:
// tool-call identity by index, then id, then position; ids and names never
// concatenated; arguments as strings, objects or null; the last finish
// reason wins; usage replaced by each later report; a refusal is visible
// text, as the Responses API's refusal parts are; in-band errors are
// failures; only the literal [DONE] completes a stream.
package openaichat

// Package deepseek is the adapter for DeepSeek's Chat Completions API, a
// provider type of its own rather than an OpenAI-compatible connector: it
// owns DeepSeek's request dialect (one leading system message, consecutive
// user text joined, tool results as role tool, reasoning_content replayed
// only on tool-call turns and only when the model requires it, images
// rejected before anything is flattened).
//
// It does not own the transport, the Chat Completions wire types or the
// stream translation, and it must not copy them: the transport (openai-go
// with an explicit base URL and key) and the wire types are openaiwire's,
// the stream translation is openaichat's, whose Stream it uses. The wire
// facts DeepSeek adds there (reasoning_content deltas, usage on the finish
// chunk with prompt_cache_hit_tokens, keep-alive comments while queued,
// insufficient_system_resource, x-ds-trace-id) are general rules of that
// translator, so this package only proves them with DeepSeek-shaped
// fixtures.
package deepseek

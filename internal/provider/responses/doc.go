// Package responses is the adapter for the OpenAI Responses API. It
// serializes a provider.Request into a Responses request body (instructions,
// input items, function tools, store false), sends it through openaiwire's
// openai-go transport (explicit base URL and key, SDK retries off: the
// executor owns retries), and translates the answer, streamed as
// server-sent events or returned as one JSON response, into operations on
// an assemble.Assembler.
//
// One Translator serves both modes: the stream feeds it events, the
// non-streaming mode feeds it the whole response, and both end in the same
// item, status and usage translation. Each output item is one block, its
// events correlated by output_index whatever their item ids (by id only
// where an event has no output_index), and text a stream delivered is never
// added again by a done event or the terminal output; a function call's
// identity is its call_id, and response.output_item.done ends it. There is
// no [DONE] and no finish reason: only response.completed and
// response.incomplete complete a stream, the finish is derived from the
// status and the output items, and response.failed and error events are
// failures, even over HTTP 200.
//
// It must not read the environment, log or put in errors any prompt,
// argument, reasoning or response body, or let reasoning reach visible
// text.
package responses

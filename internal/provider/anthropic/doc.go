// Package anthropic is the adapter for Anthropic's Messages API
// (api: anthropic_messages), through the official SDK,
// github.com/anthropics/anthropic-sdk-go/v2. It serializes a
// provider.Request into a Messages request body with the SDK's request
// types, sends it with the SDK's client (an explicit base URL and key, the
// SDK's retries off: the executor owns retries), and translates the
// streamed answer, decoded into the SDK's event types, into operations on
// an assemble.Assembler.
//
// The SDK's own stream reader (Messages.NewStreaming, ssestream.Stream) is
// not used, for three reasons: its line scanner grows to 32 MiB whatever
// the attempt's limits; it drops ping events, so a stream of pings alone
// would look like nothing arrived rather than like keep-alives that are
// not progress; and it takes a MessageNewParams, while a prepared body must
// be sent byte for byte by every retry. So the SDK posts the prepared
// bytes, and its SSE framing (ssestream.NewDecoder) reads the body through
// openaiwire.BoundSSE, which fails the attempt with RESPONSE_TOO_LARGE
// before any line, event or stream passes its limit; each event's data is
// decoded into anthropic.MessageStreamEventUnion (or shared.ErrorResponse
// for an error event), and the idle clock (openaiwire.Watch) is reset by
// every event but ping. HTTP error bodies, which the SDK reads whole, are
// bounded by openaiwire.BoundErrorBody.
//
// Translation: content blocks are assembler blocks by their index. Text
// deltas are text; tool_use blocks take their input_json_delta fragments
// by index, and a call ends with its content_block_stop, settled once the
// stop reason is known: under max_tokens the block being written when the
// tokens ran out stays open, so it is never complete nor executable, even
// when its arguments parse. Thinking deltas are reasoning, never visible
// text; each thinking block's signature_delta is kept with it, and
// redacted_thinking blocks are kept opaque. Both come back in
// assemble.Response.Echo (see Echo), which Prepare replays. Stop reasons
// are normalized by assemble.NormalizeFinish with the raw value kept.
// Usage is message_start's, replaced field by field by message_delta's
// cumulative counts. An error event is a failure (overloaded_error is
// SERVER, retried); only message_stop completes a stream.
//
// It must not read the environment, log or put in errors any prompt,
// argument, reasoning, signature or response body, or let reasoning or
// replay state reach visible text or a normalized delta. Its descriptor,
// API, is registered in internal/provider/apis.
package anthropic

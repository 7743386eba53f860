// Package openaiwire owns the openai-go transport that every OpenAI-style
// adapter (openaichat, deepseek, responses) shares: a client built from
// explicit options that reads nothing from the environment and has the
// SDK's retries off (the executor owns retries); a POST whose answer is
// bounded by an idle timeout that only progress resets (an SSE event, never
// a comment, or bytes of a non-streamed body) and by the attempt's
// provider.Limits (BoundSSE under the event decoder for lines, events and
// the stream; ReadBody and the error-body middleware for whole bodies), so
// no buffer grows past them; the classification of a request that got no
// answer and of an answer cut short; the SSE body terminator; and the Chat
// Completions request wire types.
//
// Its SDK-independent parts (Watch, the idle clock and limits of one
// request; BoundSSE; Terminate; BoundErrorBody, a middleware both SDKs
// accept) also serve internal/provider/anthropic, whose requests
// anthropic-sdk-go sends.
//
// It must not translate a stream or a body into an assemble.Assembler,
// decide whether a failure is retried, read the environment, or log or put
// in an error any request or response body.
package openaiwire

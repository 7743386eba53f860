// Package provider is the adapter boundary (the ProviderExecutor of the
// seeds): it resolves a route to its targets, calls the adapter of each
// target's wire API, relays every frame as it arrives, classifies failures,
// retries within a step and falls back along the route's chain, and returns
// one finalized result with the metadata of every attempt.
//
// It owns failure classes and the decision of what is retryable. It does not
// decide what happens after a result is final (tools, continuation, budgets:
// internal/turn), knows nothing of NATS, and never sees the session object:
// adapters receive only a provider-neutral Request.
//
// Every attempt is bounded by the executor's Limits, enforced while the
// answer arrives (never buffered past them): SSE line, event and stream
// bytes, text, reasoning, tool calls, argument and message bytes, and
// frames. Crossing one is RESPONSE_TOO_LARGE, its Reason naming the limit.
// Retries per class under the normal policy:
//
//	EMPTY_RESPONSE, RATE_LIMIT, SERVER, TIMEOUT, TRANSPORT  retried, then next target
//	STREAM_CLOSED, MALFORMED_RESPONSE, RESPONSE_TOO_LARGE,
//	INCOMPLETE_RESPONSE, AUTH, QUOTA, PAYMENT,
//	REQUEST_TOO_LARGE, INVALID_REQUEST, PROVIDER_ERROR      not retried, next target
//	UNSUPPORTED, DEPRECATED_PROVIDER, NO_ROUTE              not tried, next target
//	CANCELLED, INVALID_PREPARED_CALL, CURSOR_LOST           not retried, the chain ends
//
// The always mode retries every request failure but RESPONSE_TOO_LARGE and
// CURSOR_LOST: the same request is likely to be answered as largely again.
package provider

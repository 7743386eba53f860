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
package provider

// Package continuation owns the continuation decision: whether a turn may
// continue a provider-side conversation through a durable cursor (the
// Responses API's previous_response_id), must degrade to replaying the
// session history because the target changed, or starts from replay
// because there is nothing to continue. It also owns the versioned
// envelope that carries that state from one turn to the next, the table
// from wire API to continuation strategy, and what happens when a provider
// reports that a cursor no longer exists.
//
// It never calls a provider, never stores or loads anything (the caller
// keeps the serialized envelope in worker-only state) and never sees
// message content: it handles hashes of the system prompt and the toolset,
// provider, model and mode names, counts and the opaque cursor. The hashes
// live only in worker-only state, never in events.
package continuation

// Package history turns a session log into the messages of the next
// provider request. It owns the session-log model seen by the turn loop
// (which messages belong to which turn, which tool groups are complete) and
// the projection of that log into provider-neutral request messages.
//
// It never calls a provider and never writes to NATS; it reads finalized
// messages only, so nothing a provider streamed but did not finalize can
// reach a later request.
package history

// Package history turns a session log into the messages of the next
// provider request: prompt assembly. It owns the session-log model the turn
// loop reads (which messages belong to which turn, which tool groups are
// complete, what a turn has spent), the selection of a token-budgeted
// chronological suffix of prior history in atomic units (messages, and tool
// groups kept whole), turn-level replay safety, the native-or-flat
// projection of that history for each destination (with reasoning echo only
// where the destination requires it and the turn is safe), the versioned
// replay state stored per step, and the sanitized input of compression.
//
// It never calls a provider and never writes anything: it reads finalized
// messages and worker-only replay state, so nothing a provider streamed but
// did not finalize, and no echo, raw reasoning or secret, can reach a later
// request, a summary input or a public record through it.
package history

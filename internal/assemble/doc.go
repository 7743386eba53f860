// Package assemble turns a provider's normalized stream operations into one
// finalized assistant response, provider-neutrally (LLM-BLOCK-ASSEMBLER):
// blocks are kept by index in insertion order; reasoning, text and several
// tool calls interleave; fragments never cross block identities; the first
// end of a block is authoritative and later deltas or ends for it are ignored.
//
// It also derives, from the same operations, the public normalized delta of
// each frame (so what a UI sees and what the session log gets cannot
// disagree, and reasoning cannot leak into a delta), normalizes finish
// reasons, and keeps usage once with final values.
//
// It enforces the completion contract: a tool call is executable only when
// its block was ended and the stream reached its terminal marker; arguments
// that merely parse so far are not complete. It bounds what it accumulates
// (Limits: text, reasoning, tool calls, argument and message bytes): the
// operation that would cross a limit is refused and reported by Err, and
// nothing is taken after it. It knows no wire format: the
// adapters in internal/provider/<api> translate their streams into calls on
// an Assembler.
package assemble

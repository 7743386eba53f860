// Package scripted is the replay adapter (LLM-REPLAY-DERIVATION): it
// derives one scripted provider call per recorded attempt from a turn's
// record, the provider's raw frames (TURN_RAW) and the attempt end markers
// among its chunks (TURN_CHUNKS), and serves those calls, in order, through
// the provider.Adapter interface, so a recorded turn can be re-run offline
// through the executor.
//
// It owns the derivation (Derive), reading a turn's record from TURN_RAW
// and TURN_CHUNKS (Load) and the replay (Adapter): each call relays its
// recorded frames through a wire translator, so the relayed deltas are
// recomputed by the code under test, and ends as recorded (completed, or
// failed with the recorded class). A thrown stream or a hang leaves no end
// marker and cannot be derived from the record alone: an explicit Override
// supplies it.
//
// It is a test and snapshot adapter, not production session recovery: it
// never sends anything to a provider, never writes to NATS, and never puts
// frame content, prompts or request bodies in its errors.
package scripted

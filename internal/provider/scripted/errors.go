package scripted

import "errors"

// Errors of derivation, loading and replay.
var (
	// ErrNoMarker: an attempt's record has no end marker (the worker
	// crashed or the stream hung) and no Override supplies its outcome.
	ErrNoMarker = errors.New("scripted: attempt has no end marker; a thrown stream or a hang needs an Override")
	// ErrInconsistent: the raw frames and chunks cannot be one turn's
	// record (a gap or a duplicate in a sequence, frames after an end
	// marker, an unknown marker, a chunk without its raw frame, records of
	// another turn or target).
	ErrInconsistent = errors.New("scripted: inconsistent turn record")
	// ErrOverride: an Override is invalid, duplicated, matches no attempt,
	// or contradicts a recorded end marker.
	ErrOverride = errors.New("scripted: invalid override")
	// ErrNoChunks: the turn has nothing recorded: no raw frames in
	// TURN_RAW and no chunks in TURN_CHUNKS.
	ErrNoChunks = errors.New("scripted: turn has no raw frames and no chunks")
	// ErrExhausted: Stream was called after every scripted call was served.
	ErrExhausted = errors.New("scripted: no scripted call left")
	// ErrDiverged: the re-run asked for something the recording does not
	// hold (another target), or the frames replayed to another outcome than
	// the recorded one.
	ErrDiverged = errors.New("scripted: replay diverged from the recording")
	// ErrNotPrepared: Stream got a body the scripted adapter did not prepare.
	ErrNotPrepared = errors.New("scripted: body was not prepared by the scripted adapter")
)

package replay

import "errors"

// Errors of reading a recording and of replaying it.
var (
	// ErrMissingStream: the server holds no turnstream stream (or bucket)
	// the replay reads: it is not the server the turn ran on, or its
	// topology was never created.
	ErrMissingStream = errors.New("replay: stream not found")
	// ErrUnknownSession: the session log holds no message of the session.
	ErrUnknownSession = errors.New("replay: unknown session")
	// ErrUnknownTurn: the session log holds no message of the turn.
	ErrUnknownTurn = errors.New("replay: unknown turn")
	// ErrNotEnded: the turn has no terminal event (it is still running, or
	// its events expired from TURN_EVENTS).
	ErrNotEnded = errors.New("replay: the turn has not ended")
	// ErrNoFrames: TURN_RAW holds no raw frame of the turn (they expired:
	// TURN_RAW keeps them for a short max age).
	ErrNoFrames = errors.New("replay: no raw frames of the turn")
	// ErrUnsupportedAPI: the turn called a provider whose wire API the
	// scripted adapter cannot translate.
	ErrUnsupportedAPI = errors.New("replay: wire API cannot be replayed")
	// ErrDiverged: the replayed turn differs from the recorded one.
	ErrDiverged = errors.New("replay: the replay diverged from the recorded turn")
)

package continuation

import (
	"errors"
	"fmt"
)

var (
	// ErrMalformed: the stored state is not a JSON object of the envelope's
	// shape.
	ErrMalformed = errors.New("continuation: malformed envelope")
	// ErrInvalid: the envelope parses but a required field is missing or
	// the fields contradict each other (a durable mode without a cursor, a
	// cursor on a cursorless mode).
	ErrInvalid = errors.New("continuation: invalid envelope")
	// ErrVersion: the envelope has a schema version this worker does not
	// read. Errors of this kind are *VersionError.
	ErrVersion = errors.New("continuation: unsupported envelope schema version")
)

// VersionError is the error of an envelope with a schema version other
// than SchemaVersion. It matches ErrVersion.
type VersionError struct {
	// Got is the envelope's schema version, 0 if it had none.
	Got int
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("%v %d (want %d)", ErrVersion, e.Got, SchemaVersion)
}

// Is reports whether target is ErrVersion.
func (e *VersionError) Is(target error) bool { return target == ErrVersion }

package inspect

import "errors"

// ErrNotFound means the streams hold nothing of the session or turn asked
// for (it never ran, or its records aged out).
var ErrNotFound = errors.New("inspect: nothing stored")

package client

import "errors"

var (
	// ErrInvalidOption is wrapped by the errors of options New rejects.
	ErrInvalidOption = errors.New("client: invalid option")
	// ErrClosed is returned by Turn.Next after Turn.Close, unless the turn
	// had already ended (then Next keeps returning io.EOF).
	ErrClosed = errors.New("client: turn closed")
)

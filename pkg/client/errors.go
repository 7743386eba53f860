package client

import "errors"

var (
	// ErrInvalidOption is wrapped by the errors of options New rejects.
	ErrInvalidOption = errors.New("client: invalid option")
	// ErrClosed is returned by Turn.Next after Turn.Close, unless the turn
	// had already ended (then Next keeps returning io.EOF).
	ErrClosed = errors.New("client: turn closed")
	// ErrNoWorkers is wrapped by Cancel's error when no worker listens
	// for cancels: the cancel reached nobody.
	ErrNoWorkers = errors.New("client: no worker answered")
	// ErrCancelNotStored is wrapped by Cancel's error when a worker got
	// the cancel but could not store it: a turn it does not run may still
	// run. Cancel again.
	ErrCancelNotStored = errors.New("client: cancel not stored")
)

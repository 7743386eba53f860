package toolworker

import "errors"

var (
	// ErrInvalidOption is returned by Serve when an Option is invalid.
	ErrInvalidOption = errors.New("toolworker: invalid option")
	// ErrInvalidHandlers is returned by Serve when the handler map is empty,
	// holds a nil Handler or a name that is not a valid tool name.
	ErrInvalidHandlers = errors.New("toolworker: invalid handlers")
)

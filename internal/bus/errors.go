package bus

import (
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrFenced means a session-log append found another writer's message where
// it expected its own last one: this worker no longer owns the session and
// must stop writing.
var ErrFenced = errors.New("bus: session log moved under this writer (fenced)")

// ErrTooLarge means a record does not fit the server's max payload. It is
// never retried: the same record would not fit on a redelivery either.
var ErrTooLarge = errors.New("bus: record exceeds the server's max payload")

func isWrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
	}
	return false
}

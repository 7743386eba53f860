package bus

import (
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrFenced means a session-log append found another writer's message where
// it expected its own last one: this worker no longer owns the session and
// must stop writing.
var ErrFenced = errors.New("bus: session log moved under this writer (fenced)")

func isWrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
	}
	return false
}

package bus

import (
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/pkg/wire"
)

// ErrFenced means a session-log append found another writer's message where
// it expected its own last one: this worker no longer owns the session and
// must stop writing.
var ErrFenced = errors.New("bus: session log moved under this writer (fenced)")

// sized marks a publish the client refused for its size (headers and body
// over the server's max payload) as wire.ErrRecordTooLarge: it would not
// fit on a redelivery either.
func sized(err error) error {
	if errors.Is(err, nats.ErrMaxPayload) {
		return fmt.Errorf("%w: %w", wire.ErrRecordTooLarge, err)
	}
	return err
}

func isWrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
	}
	return false
}

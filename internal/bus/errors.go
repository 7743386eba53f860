package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/pkg/wire"
)

// ErrFenced means the server refused a write because its fence moved: a
// later delivery took the session's lease (or, for an unleased writer, the
// session log moved under it). The writer must stop writing.
var ErrFenced = wire.ErrFenced

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

// opTimeout bounds one JetStream request of the bus. A request's reply
// lost to a restarting server or a leader change would otherwise hold the
// caller until its own context ends, and a turn's context may not end for
// a long time (its wall clock), or ever (a delivery before its run).
const opTimeout = 10 * time.Second

// op bounds ctx by opTimeout (an earlier deadline of ctx stays).
func op(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, opTimeout)
}

// writeOp bounds a write's ctx by StallWait: as long as an ack may take
// under load. A write that gave up sooner would fail its delivery and
// have its turn run again.
func writeOp(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, StallWait)
}

// fenced marks a write the server refused because its fence moved (a
// wrong last sequence on the fence subject) as ErrFenced.
func fenced(err error) error {
	if isWrongLastSequence(err) {
		return fmt.Errorf("%w: %w", ErrFenced, err)
	}
	return err
}

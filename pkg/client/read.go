package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"
)

// The readers' bounds and timings, shared by Turn and Tap.
const (
	// readBatch and readMaxBytes bound one batch direct get, and so the
	// records read ahead of Next (the server sends at least one record,
	// whatever its size).
	readBatch    = 256
	readMaxBytes = 2 << 20
	// readTimeout bounds one direct get.
	readTimeout = 5 * time.Second
	// A failed read is retried after minRetry, doubling up to maxRetry.
	minRetry = 50 * time.Millisecond
	maxRetry = 2 * time.Second
)

// numPendingHeader is set by the server on each record of a batch direct
// get: how many records of the subject filter, stored when the request
// arrived, follow it.
const numPendingHeader = "Nats-Num-Pending"

var (
	// errNoResponse: a batch direct get ended with neither a record nor
	// the server's end of batch (it timed out).
	errNoResponse = errors.New("no response to a direct get")
	// errBehind: the replica that answered a direct get has not stored
	// what the stream leader has yet.
	errBehind = errors.New("direct get behind the stream leader")
)

// getBatch reads with one batch direct get (at most readBatch records and
// readMaxBytes) the records of stream stored on filter after sequence after,
// in stream order, and passes each to take. take reports whether it took the
// record; it passes over one it has already (at or before the last it took)
// or on another subject. filter may hold wildcards.
//
// caughtUp reports that the batch ended with the last record stored on
// filter when the server served it; otherwise more follow, read them from
// the last record taken. A batch that took nothing while more are pending
// is an error, so a caller never reads the same batch in a loop.
func getBatch(ctx context.Context, js jetstream.JetStream, stream, filter string, after uint64, take func(*jetstream.RawStreamMsg) bool) (caughtUp bool, err error) {
	msgs, err := jetstreamext.GetBatch(ctx, js, stream, readBatch,
		jetstreamext.GetBatchSeq(after+1),
		jetstreamext.GetBatchSubject(filter),
		jetstreamext.GetBatchMaxBytes(readMaxBytes))
	if err != nil {
		return false, err
	}
	n, took, pending := 0, 0, uint64(1)
	for m, err := range msgs {
		if errors.Is(err, jetstreamext.ErrNoMessages) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		n++
		if pending, err = strconv.ParseUint(m.Header.Get(numPendingHeader), 10, 64); err != nil {
			pending = 1 // unknown: read on
		}
		if take(m) {
			took++
		}
	}
	switch {
	case n == 0:
		// The iterator ends quietly when its context does.
		if err := ctx.Err(); err != nil {
			return false, err
		}
		return false, errNoResponse
	case took == 0 && pending > 0:
		return false, errNoResponse
	}
	return pending == 0, nil
}

// readContext bounds one read and ends it when done is closed (the reader
// was closed).
func readContext(ctx context.Context, done <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	go func() {
		select {
		case <-done:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// backoff paces the reads of a reader whose reads fail (a server
// restarting, a leader election): each consecutive failure doubles the
// wait before the next read, from minRetry up to maxRetry.
type backoff struct {
	at       time.Time // a failed read is retried from then on
	failures int       // consecutive failed reads
	lastErr  error     // the last failed read, until one succeeds
}

// succeeded forgets the failures: the next read is due at once.
func (b *backoff) succeeded() { *b = backoff{} }

// failed records a failed read and when to read again.
func (b *backoff) failed(err error) {
	b.lastErr = err
	b.failures++
	b.at = time.Now().Add(min(minRetry<<min(b.failures-1, 8), maxRetry))
}

// due reports whether the next read may run now.
func (b *backoff) due() bool { return !time.Now().Before(b.at) }

// ctxErr is ctx's error, naming the last failed read if reads were
// failing.
func (b *backoff) ctxErr(ctx context.Context) error {
	if b.lastErr != nil {
		return fmt.Errorf("%w (%w)", ctx.Err(), b.lastErr)
	}
	return ctx.Err()
}

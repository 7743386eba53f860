package client

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The readers' bounds and timings, shared by Turn and Tap.
const (
	// readTimeout bounds one direct get.
	readTimeout = 5 * time.Second
	// A failed read is retried after minRetry, doubling up to maxRetry.
	minRetry = 50 * time.Millisecond
	maxRetry = 2 * time.Second
)

// errBehind: the replica that answered a direct get has not stored what
// the stream leader has yet.
var errBehind = errors.New("direct get behind the stream leader")

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

// Package directget reads a stream's records with batch direct gets
// ($JS.API.DIRECT.GET): one request answers with up to a batch of records
// of a subject filter after a sequence, and no consumer is created. Clients
// following a turn (pkg/client) and workers reading a session (internal/bus)
// read this way.
package directget

import (
	"context"
	"errors"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"
)

// The bounds of one batch: the records read ahead of their use (the server
// sends at least one record, whatever its size).
const (
	MaxRecords = 256
	MaxBytes   = 2 << 20
)

// numPendingHeader is set by the server on each record of a batch direct
// get: how many records of the subject filter, stored when the request
// arrived, follow it.
const numPendingHeader = "Nats-Num-Pending"

// ErrNoResponse: a batch ended with neither a record nor the server's end of
// batch (it timed out), or took nothing while more were pending.
var ErrNoResponse = errors.New("no response to a direct get")

// Batch reads with one batch direct get (at most MaxRecords records and
// MaxBytes) the records of stream stored on filter after sequence after, in
// stream order, and passes each to take. take reports whether it took the
// record; it passes over one it has already (at or before the last it took)
// or on another subject. filter may hold wildcards.
//
// caughtUp reports that the batch ended with the last record stored on
// filter when the server served it; otherwise more follow: read them from
// the last record taken. A batch that took nothing while more are pending
// is an error, so a caller never reads the same batch in a loop.
func Batch(ctx context.Context, js jetstream.JetStream, stream, filter string, after uint64, take func(*jetstream.RawStreamMsg) bool) (caughtUp bool, err error) {
	msgs, err := jetstreamext.GetBatch(ctx, js, stream, MaxRecords,
		jetstreamext.GetBatchSeq(after+1),
		jetstreamext.GetBatchSubject(filter),
		jetstreamext.GetBatchMaxBytes(MaxBytes))
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
		return false, ErrNoResponse
	case took == 0 && pending > 0:
		return false, ErrNoResponse
	}
	return pending == 0, nil
}

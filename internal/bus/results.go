package bus

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/pkg/wire"
)

// ResultRecord is one record read from a session's result subject. Err is
// set, and Result empty, when the record could not be decoded.
type ResultRecord struct {
	Result wire.ToolResult
	Seq    uint64
	Err    error
}

// ResultFollower reads a session's tool results in stream order.
type ResultFollower struct {
	b    *Bus
	cons jetstream.Consumer
	it   jetstream.MessagesContext
}

// ResultSkew is subtracted from the start time of a result follower: the
// results stream may be led by another server than the one that stored the
// message the follower starts from, and their clocks may differ. Extra
// results read because of it are filtered out by turn and call id.
const ResultSkew = time.Minute

// FollowResults follows session's tool results stored since the given
// server time (less ResultSkew). The caller must Stop it.
func (b *Bus) FollowResults(ctx context.Context, session string, since time.Time) (*ResultFollower, error) {
	start := since.Add(-ResultSkew)
	cctx, cancel := op(ctx)
	defer cancel()
	cons, err := b.results.OrderedConsumer(cctx, jetstream.OrderedConsumerConfig{
		FilterSubjects:    []string{b.subjects.Result(session)},
		DeliverPolicy:     jetstream.DeliverByStartTimePolicy,
		OptStartTime:      &start,
		InactiveThreshold: readerInactiveThreshold,
		MaxResetAttempts:  readerResets,
	})
	if err != nil {
		return nil, fmt.Errorf("bus: follow results: %w", err)
	}
	it, err := cons.Messages(readerExpiry)
	if err != nil {
		return nil, fmt.Errorf("bus: follow results: %w", err)
	}
	return &ResultFollower{b: b, cons: cons, it: it}, nil
}

// Next blocks for the next result record until ctx is done.
func (f *ResultFollower) Next(ctx context.Context) (ResultRecord, error) {
	m, err := f.it.Next(jetstream.NextContext(ctx))
	if err != nil {
		if ctx.Err() != nil {
			return ResultRecord{}, ctx.Err()
		}
		return ResultRecord{}, fmt.Errorf("bus: results: %w", err)
	}
	var rec ResultRecord
	if meta, err := m.Metadata(); err == nil {
		rec.Seq = meta.Sequence.Stream
	}
	if err := wire.Decode(m.Headers().Get(wire.HeaderContentType), m.Data(), &rec.Result); err != nil {
		rec.Err = fmt.Errorf("bus: result record: %w", err)
	} else if err := rec.Result.Validate(); err != nil {
		rec.Err = err
	}
	return rec, nil
}

// Stop ends the follower and deletes its consumer. It is idempotent.
func (f *ResultFollower) Stop() {
	f.it.Stop()
	f.b.dropOrdered(context.Background(), f.cons)
}

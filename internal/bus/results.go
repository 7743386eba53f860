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

// LastResult is the stream sequence of session's last stored tool result,
// 0 if there is none (one direct get).
func (b *Bus) LastResult(ctx context.Context, session string) (uint64, error) {
	ctx, cancel := op(ctx)
	defer cancel()
	seq, err := b.dg.Last(ctx, wire.StreamResults, b.subjects.Result(session))
	if err != nil {
		return 0, fmt.Errorf("bus: last result of %s: %w", session, err)
	}
	return seq, nil
}

// FollowResults follows session's tool results stored after stream
// sequence after when it is set (LastResult, read before the calls were
// dispatched), else since the given server time (less ResultSkew: a
// session whose results came fast reads up to ResultSkew of them again).
// The caller must Stop it.
func (b *Bus) FollowResults(ctx context.Context, session string, after uint64, since time.Time) (*ResultFollower, error) {
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects:    []string{b.subjects.Result(session)},
		InactiveThreshold: readerInactiveThreshold,
		MaxResetAttempts:  readerResets,
	}
	if after > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, after+1
	} else {
		start := since.Add(-ResultSkew)
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &start
	}
	cctx, cancel := op(ctx)
	defer cancel()
	cons, err := b.results.OrderedConsumer(cctx, cfg)
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

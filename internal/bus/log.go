package bus

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/pkg/wire"
)

// Log is a session log as read from TURN_MESSAGES.
type Log struct {
	// Messages in log order.
	Messages []wire.Message
	// Stored holds the server's store time of each message.
	Stored []time.Time
	// LastStreamSeq is the stream sequence of the last message, the fence
	// for the next append; 0 for an empty log.
	LastStreamSeq uint64
	// Skipped counts records that did not decode. Only workers write the
	// log, so this is a fault to report, not a reason to block the session.
	Skipped int
}

// LoadLog reads a session's whole log.
func (b *Bus) LoadLog(ctx context.Context, session string) (*Log, error) {
	subject := b.subjects.Message(session)
	lctx, cancel := op(ctx)
	last, err := b.messages.GetLastMsgForSubject(lctx, subject)
	cancel()
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return &Log{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("bus: session log tail: %w", err)
	}
	log := &Log{LastStreamSeq: last.Sequence}
	err = b.readRange(ctx, b.messages, subject, 1, last.Sequence, func(h jetstream.Msg) error {
		var m wire.Message
		if err := wire.Decode(h.Headers().Get(wire.HeaderContentType), h.Data(), &m); err != nil {
			log.Skipped++
			return nil
		}
		log.Messages = append(log.Messages, m)
		meta, err := h.Metadata()
		if err != nil {
			return fmt.Errorf("bus: session log record: %w", err)
		}
		log.Stored = append(log.Stored, meta.Timestamp)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return log, nil
}

// readerExpiry bounds each pull of a reader: its heartbeats come every
// half of it, and two missed ones (a leader change, a restarted node) make
// the reader pull again instead of waiting for the default 30s.
var readerExpiry = jetstream.PullExpiry(5 * time.Second)

// readerResets bounds how often a reader recreates its consumer (after a
// restart or a leader change) before it fails: nats.go's default retries
// forever, out of reach of the caller's context.
const readerResets = 4

// readerInactiveThreshold lets the server delete the ephemeral consumers of
// short reads soon after they stop.
const readerInactiveThreshold = 10 * time.Second

// readRange delivers the messages of subject with stream sequences in
// [from, to] in order.
func (b *Bus) readRange(ctx context.Context, s jetstream.Stream, subject string, from, to uint64, fn func(jetstream.Msg) error) error {
	cctx, cancel := op(ctx)
	defer cancel()
	cons, err := s.OrderedConsumer(cctx, jetstream.OrderedConsumerConfig{
		FilterSubjects:    []string{subject},
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       from,
		InactiveThreshold: readerInactiveThreshold,
		MaxResetAttempts:  readerResets,
	})
	if err != nil {
		return fmt.Errorf("bus: read %s: %w", subject, err)
	}
	it, err := cons.Messages(readerExpiry)
	if err != nil {
		return fmt.Errorf("bus: read %s: %w", subject, err)
	}
	defer b.dropOrdered(ctx, cons)
	defer it.Stop()
	for {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("bus: read %s: %w", subject, err)
		}
		meta, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("bus: read %s: %w", subject, err)
		}
		if err := fn(m); err != nil {
			return err
		}
		if meta.Sequence.Stream >= to || meta.NumPending == 0 {
			return nil
		}
	}
}

// dropOrdered deletes an ordered consumer once its reader has stopped, so
// busy workers do not pile up ephemeral consumers until they expire.
func (b *Bus) dropOrdered(ctx context.Context, cons jetstream.Consumer) {
	info := cons.CachedInfo()
	if info == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_ = b.js.DeleteConsumer(ctx, info.Stream, info.Name) // best effort: it expires anyway
}

// ChunkTail locates a turn's last stored chunk.
type ChunkTail struct {
	Step, Attempt, Seq int
	// Marker is the chunk's marker, "" for a delta.
	Marker string
}

// LastChunk returns a turn's last stored chunk (zero when it has none), so
// a resumed turn numbers its next attempts after those an earlier delivery
// published, and ends an attempt it left without a marker.
func (b *Bus) LastChunk(ctx context.Context, session, turn string) (ChunkTail, error) {
	ctx, cancel := op(ctx)
	defer cancel()
	m, err := b.chunks.GetLastMsgForSubject(ctx, b.subjects.Chunk(session, turn))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return ChunkTail{}, nil
	}
	if err != nil {
		return ChunkTail{}, fmt.Errorf("bus: last chunk: %w", err)
	}
	var t ChunkTail
	t.Step, _ = strconv.Atoi(m.Header.Get(wire.HeaderStep))
	t.Attempt, _ = strconv.Atoi(m.Header.Get(wire.HeaderAttempt))
	t.Seq, _ = strconv.Atoi(m.Header.Get(wire.HeaderSeq))
	var c wire.Chunk
	if wire.Decode(m.Header.Get(wire.HeaderContentType), m.Data, &c) == nil {
		t.Marker = c.Marker
	}
	return t, nil
}

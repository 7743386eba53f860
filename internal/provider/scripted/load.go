package scripted

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/pkg/wire"
)

// readerInactiveThreshold lets the server remove Load's ephemeral consumer
// soon after it stops, should deleting it fail.
const readerInactiveThreshold = 10 * time.Second

// Load reads the record of one turn, the input of Derive: its raw frames
// from TURN_RAW and its chunks from TURN_CHUNKS, each in stream order, up
// to the last record the stream held when Load read it. Raw frames are
// read by their headers (wire.Subjects.ParseRawFrame), chunks decoded by
// their Content-Type header; a record that does not read fails the load,
// since a script with a hole would replay another turn. A turn with
// neither raw frames nor chunks is ErrNoChunks. The ordered consumers it
// reads with are deleted before it returns.
func Load(ctx context.Context, js jetstream.JetStream, subjects wire.Subjects, session, turn string) ([]wire.RawFrame, []wire.Chunk, error) {
	if !wire.ValidToken(session) || !wire.ValidToken(turn) {
		return nil, nil, errors.New("scripted: session and turn must be subject tokens")
	}
	var frames []wire.RawFrame
	err := read(ctx, js, wire.StreamRaw, subjects.Raw(session, turn), "raw frame", func(m jetstream.Msg) error {
		f, err := subjects.ParseRawFrame(m.Subject(), m.Headers(), m.Data())
		if err == nil {
			frames = append(frames, f)
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	var chunks []wire.Chunk
	err = read(ctx, js, wire.StreamChunks, subjects.Chunk(session, turn), "chunk", func(m jetstream.Msg) error {
		var c wire.Chunk
		err := wire.Decode(m.Headers().Get(wire.HeaderContentType), m.Data(), &c)
		if err == nil {
			chunks = append(chunks, c)
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	if len(frames) == 0 && len(chunks) == 0 {
		return nil, nil, fmt.Errorf("%w: session %s turn %s", ErrNoChunks, session, turn)
	}
	return frames, chunks, nil
}

// readIdle bounds the wait for the next record of a read.
var readIdle = 10 * time.Second

// ErrExpired: records a read was due were no longer stored when it came
// to them.
var ErrExpired = errors.New("the records expired while they were read")

// read calls each with every record of subject in stream, in order, up to
// the last one stored when it starts (none: no call).
func read(ctx context.Context, js jetstream.JetStream, stream, subject, what string, each func(jetstream.Msg) error) error {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return fmt.Errorf("scripted: stream %s: %w", stream, err)
	}
	last, err := s.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("scripted: %s log tail: %w", what, err)
	}
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects:    []string{subject},
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		InactiveThreshold: readerInactiveThreshold,
	})
	if err != nil {
		return fmt.Errorf("scripted: read %s log: %w", what, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("scripted: read %s log: %w", what, err)
	}
	defer drop(ctx, js, cons)
	defer it.Stop()
	for {
		// Records due may expire while they are read (TURN_RAW keeps them
		// briefly): a read that waits readIdle for the next one gives up.
		nctx, cancel := context.WithTimeout(ctx, readIdle)
		m, err := it.Next(jetstream.NextContext(nctx))
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if nctx.Err() != nil {
				return fmt.Errorf("scripted: read %s log: no record for %s while %s sequence %d was due: %w", what, readIdle, stream, last.Sequence, ErrExpired)
			}
			return fmt.Errorf("scripted: read %s log: %w", what, err)
		}
		meta, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("scripted: read %s log: %w", what, err)
		}
		if err := each(m); err != nil {
			return fmt.Errorf("scripted: %s at %s sequence %d: %w", what, stream, meta.Sequence.Stream, err)
		}
		if meta.Sequence.Stream >= last.Sequence || meta.NumPending == 0 {
			return nil
		}
	}
}

// drop deletes an ordered consumer once its reader has stopped.
func drop(ctx context.Context, js jetstream.JetStream, cons jetstream.Consumer) {
	info := cons.CachedInfo()
	if info == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_ = js.DeleteConsumer(ctx, info.Stream, info.Name) // best effort: it expires anyway
}

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

// Load reads the chunk log of one turn from TURN_CHUNKS, in stream order,
// up to the last chunk stored when it starts: the input of Derive. Every
// record is decoded by its Content-Type header; one that does not decode
// fails the load, since a script with a hole would replay another turn. A
// turn with no chunks is ErrNoChunks. The ordered consumer it reads with is
// deleted before it returns.
func Load(ctx context.Context, js jetstream.JetStream, subjects wire.Subjects, session, turn string) ([]wire.Chunk, error) {
	if !wire.ValidToken(session) || !wire.ValidToken(turn) {
		return nil, errors.New("scripted: session and turn must be subject tokens")
	}
	subject := subjects.Chunk(session, turn)
	stream, err := js.Stream(ctx, wire.StreamChunks)
	if err != nil {
		return nil, fmt.Errorf("scripted: stream %s: %w", wire.StreamChunks, err)
	}
	last, err := stream.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, fmt.Errorf("%w: session %s turn %s", ErrNoChunks, session, turn)
	}
	if err != nil {
		return nil, fmt.Errorf("scripted: chunk log tail: %w", err)
	}
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects:    []string{subject},
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		InactiveThreshold: readerInactiveThreshold,
	})
	if err != nil {
		return nil, fmt.Errorf("scripted: read chunk log: %w", err)
	}
	it, err := cons.Messages()
	if err != nil {
		return nil, fmt.Errorf("scripted: read chunk log: %w", err)
	}
	defer drop(ctx, js, cons)
	defer it.Stop()
	var out []wire.Chunk
	for {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("scripted: read chunk log: %w", err)
		}
		meta, err := m.Metadata()
		if err != nil {
			return nil, fmt.Errorf("scripted: read chunk log: %w", err)
		}
		var c wire.Chunk
		if err := wire.Decode(m.Headers().Get(wire.HeaderContentType), m.Data(), &c); err != nil {
			return nil, fmt.Errorf("scripted: chunk at stream sequence %d: %w", meta.Sequence.Stream, err)
		}
		out = append(out, c)
		if meta.Sequence.Stream >= last.Sequence || meta.NumPending == 0 {
			return out, nil
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

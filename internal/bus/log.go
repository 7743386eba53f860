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
	// Requests holds the submit-stream sequence of the request whose turn
	// appended each message (wire.HeaderRequest), 0 where it has none.
	Requests []uint64
	// LastStreamSeq is the stream sequence of the last message, the fence
	// for the next append; 0 for an empty log.
	LastStreamSeq uint64
	// Skipped counts records that did not decode. Only workers write the
	// log, so this is a fault to report, not a reason to block the session.
	Skipped int
}

// LoadLog reads a session's whole log, with batch direct gets (a worker
// reads it with ReadSession, which keeps it).
func (b *Bus) LoadLog(ctx context.Context, session string) (*Log, error) {
	recs, err := b.readAfter(ctx, wire.StreamMessages, b.subjects.Message(session), 0)
	if err != nil {
		return nil, fmt.Errorf("bus: session log of %s: %w", session, err)
	}
	e := &sessionEntry{session: session, state: map[string]Entry{}}
	log, _ := e.apply(recs, nil)
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

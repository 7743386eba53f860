package inspect

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/directget"
	"github.com/turnstream/turnstream/pkg/wire"
)

// MaxRecords bounds the records read of each stream for one inspection;
// past it the view is marked Truncated.
const MaxRecords = 100_000

// maxGapRetries bounds the re-reads of a batch that came with a record
// missing.
const maxGapRetries = 3

// Reader reads sessions and turns from the streams.
type Reader struct {
	dg       *directget.Getter
	subjects wire.Subjects
}

// NewReader reads with js's connection, under the subject prefix
// ("" for wire.DefaultPrefix).
func NewReader(js jetstream.JetStream, prefix string) *Reader {
	return &Reader{dg: directget.New(js), subjects: wire.Subjects{Prefix: prefix}}
}

// Turn reads the turn's events, messages and chunks and builds its view.
// It fails wrapping ErrNotFound when nothing of the turn is stored.
func (r *Reader) Turn(ctx context.Context, session, turn string) (*Turn, error) {
	if !wire.ValidToken(session) || !wire.ValidToken(turn) {
		return nil, errors.New("inspect: session and turn ids are 1-128 characters of [A-Za-z0-9_-]")
	}
	var rec Records
	truncated, err := r.readAll(ctx, []source{
		{wire.StreamEvents, r.subjects.Event(session), into(&rec, &rec.Events, func(ev *wire.SessionEvent) bool { return ev.TurnID == turn })},
		{wire.StreamMessages, r.subjects.Message(session), into(&rec, &rec.Messages, func(m *wire.Message) bool { return m.TurnID == turn })},
		{wire.StreamChunks, r.subjects.Chunk(session, turn), into(&rec, &rec.Chunks, nil)},
	})
	if err != nil {
		return nil, err
	}
	if len(rec.Events) == 0 && len(rec.Messages) == 0 && len(rec.Chunks) == 0 {
		return nil, fmt.Errorf("%w of turn %s of session %s", ErrNotFound, turn, session)
	}
	t := BuildTurn(session, turn, rec)
	t.Truncated = truncated
	return t, nil
}

// Session reads the session's events and messages and builds its view.
// It fails wrapping ErrNotFound when nothing of the session is stored.
func (r *Reader) Session(ctx context.Context, session string) (*Session, error) {
	if !wire.ValidToken(session) {
		return nil, errors.New("inspect: a session id is 1-128 characters of [A-Za-z0-9_-]")
	}
	var rec Records
	truncated, err := r.readAll(ctx, []source{
		{wire.StreamEvents, r.subjects.Event(session), into(&rec, &rec.Events, nil)},
		{wire.StreamMessages, r.subjects.Message(session), into(&rec, &rec.Messages, nil)},
	})
	if err != nil {
		return nil, err
	}
	if len(rec.Events) == 0 && len(rec.Messages) == 0 {
		return nil, fmt.Errorf("%w of session %s", ErrNotFound, session)
	}
	s := BuildSession(session, rec)
	s.Truncated = truncated
	return s, nil
}

// source is what to read of one stream: its records on filter, each passed
// to take.
type source struct {
	stream, filter string
	take           func(*jetstream.RawStreamMsg)
}

// into decodes each record into dst, keeping those keep accepts (nil:
// all); one that does not decode is counted in rec.Skipped.
func into[T any](rec *Records, dst *[]Stored[T], keep func(*T) bool) func(*jetstream.RawStreamMsg) {
	return func(m *jetstream.RawStreamMsg) {
		var v T
		if wire.Decode(m.Header.Get(wire.HeaderContentType), m.Data, &v) != nil {
			rec.Skipped++
			return
		}
		if keep == nil || keep(&v) {
			*dst = append(*dst, Stored[T]{Record: v, Time: m.Time})
		}
	}
}

// readAll reads every source in turn; truncated reports that one held more
// than MaxRecords records.
func (r *Reader) readAll(ctx context.Context, sources []source) (truncated bool, err error) {
	for _, s := range sources {
		cut, err := r.read(ctx, s.stream, s.filter, s.take)
		if err != nil {
			return false, err
		}
		truncated = truncated || cut
	}
	return truncated, nil
}

// read passes every record of stream stored on filter, from the first, to
// take, up to MaxRecords; truncated reports that more were stored.
func (r *Reader) read(ctx context.Context, stream, filter string, take func(*jetstream.RawStreamMsg)) (truncated bool, err error) {
	var after uint64
	n, gaps := 0, 0
	for {
		caughtUp, err := r.dg.Batch(ctx, stream, filter, after, func(m *jetstream.RawStreamMsg) bool {
			if m.Sequence <= after || m.Subject != filter {
				return false
			}
			after = m.Sequence
			if n++; n <= MaxRecords {
				take(m)
			}
			return true
		})
		switch {
		case errors.Is(err, directget.ErrGap) && gaps < maxGapRetries:
			gaps++
			continue
		case errors.Is(err, nats.ErrNoResponders):
			return false, fmt.Errorf("inspect: stream %s (no worker has created the topology yet?): %w", stream, jetstream.ErrStreamNotFound)
		case err != nil:
			return false, fmt.Errorf("inspect: read %s: %w", stream, err)
		case caughtUp:
			return n > MaxRecords, nil
		case n > MaxRecords:
			return true, nil
		}
	}
}

package client

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/directget"
	"github.com/turnstream/turnstream/pkg/wire"
)

// Update is one record of a turn: exactly one of Chunk, Message and Event is
// set.
type Update struct {
	Chunk   *wire.Chunk
	Message *wire.Message
	Event   *wire.SessionEvent
	// StreamSeq is the record's sequence in its stream (TURN_CHUNKS,
	// TURN_MESSAGES or TURN_EVENTS).
	StreamSeq uint64
}

// Position is where a follower stands in a turn's three streams: the stream
// sequence of the last record it is done with in each (delivered, or passed
// over as another turn's or undecodable). The zero Position is the start of
// every stream. Client.Resume continues after a Position.
type Position struct {
	Chunks, Messages, Events uint64
}

// Turn follows one turn's chunks, messages and events. Updates of the three
// streams are merged in arrival order; within each stream they keep stream
// order, and each record is delivered once. The terminal event
// (turn.completed, turn.failed or turn.rejected) is always the last update,
// delivered once every chunk and message of the turn stored before it has
// been; then Next returns io.EOF.
//
// A Turn reads only stored records, through the streams' live subjects and
// direct gets (see the package doc); it holds no consumer on the server.
//
// Next, Wait and Position must not be called concurrently; Close may be
// called from any goroutine.
type Turn struct {
	session, turn string
	nc            *nats.Conn
	dg            *directget.Getter
	tune          tuning
	kinds         [numKinds]follower

	// Filled by the subscriptions' handlers.
	live      chan liveRecord // bounded by tune.liveRecords
	liveBytes atomic.Int64    // bytes of the records in live, bounded by tune.liveBytes
	kick      chan struct{}   // a live record was dropped (an overflow)
	lost      chan struct{}   // closed when a subscription closed under the Turn
	lostOnce  sync.Once
	skipped   atomic.Int64

	done chan struct{}
	stop sync.Once

	// State of Next, owned by its caller.
	out        []Update // taken and not yet returned, at most one batch
	terminal   *Update  // held back until chunks and messages caught up
	eventsDone bool     // the terminal event was taken: no event is read after it
	scan       int      // the kind the next read starts looking at
	idle       time.Duration
	retry      backoff // paces failed reads
	err        error   // sticky failure
	eof        bool
}

// Session is the turn's session id.
func (t *Turn) Session() string { return t.session }

// ID is the turn id (the one Submit generated, if the request had none).
func (t *Turn) ID() string { return t.turn }

// Skipped counts the records that could not be decoded and were skipped.
// Their turn is unknown, so it counts those of every turn of the session.
func (t *Turn) Skipped() int { return int(t.skipped.Load()) }

// Position reports the records the Turn is done with: those Next returned,
// and those it passed over. Records read ahead and not yet returned are not
// included, so Resume from a Position delivers them.
func (t *Turn) Position() Position {
	pos := [numKinds]uint64{}
	for k := range t.kinds {
		pos[k] = t.kinds[k].last
	}
	held := t.out
	if t.terminal != nil {
		held = append(held[:len(held):len(held)], *t.terminal)
	}
	for _, u := range held {
		if k := u.kind(); u.StreamSeq-1 < pos[k] {
			pos[k] = u.StreamSeq - 1
		}
	}
	return Position{Chunks: pos[kindChunk], Messages: pos[kindMessage], Events: pos[kindEvent]}
}

// Next returns the turn's next update, blocking until one arrives, ctx is
// done (an error wrapping ctx.Err(), naming the last failed read if reads
// were failing; the turn stays usable) or the turn is closed (ErrClosed).
// After the terminal event it returns io.EOF, and keeps doing so.
//
// Reads that fail (a server restarting, a leader election) are retried
// until ctx ends. A closed connection is returned as an error wrapping
// jetstream.ErrConnectionClosed, and returned again by later calls.
func (t *Turn) Next(ctx context.Context) (Update, error) {
	for {
		switch {
		case t.eof:
			return Update{}, io.EOF
		case t.err != nil:
			return Update{}, t.err
		}
		if err := ctx.Err(); err != nil {
			return Update{}, t.ctxErr(ctx)
		}
		select {
		case <-t.done:
			return Update{}, ErrClosed
		default:
		}
		if len(t.out) > 0 {
			u := t.out[0]
			t.out[0] = Update{}
			t.out = t.out[1:]
			return u, nil
		}
		if t.terminal != nil && t.kinds[kindChunk].settled() && t.kinds[kindMessage].settled() {
			u := *t.terminal
			t.terminal = nil
			t.eof = true
			t.Close()
			return u, nil
		}
		t.absorbOverflow()
		if t.busy() && t.retry.due() {
			var err error
			if k := t.staleKind(); k >= 0 {
				err = t.read(ctx, k)
			} else {
				err = t.verify(ctx, t.settleKind())
			}
			if err != nil {
				if err := t.readFailed(ctx, err); err != nil {
					return Update{}, err
				}
			}
			continue
		}
		if err := t.wait(ctx); err != nil {
			return Update{}, err
		}
	}
}

// wait blocks until a live record arrives (and takes it), a live record was
// dropped, a failed read is due again, or the Turn has been idle long
// enough to check the streams' tails.
func (t *Turn) wait(ctx context.Context) error {
	retrying := t.busy()
	d := t.idle
	if retrying {
		d = time.Until(t.retry.at)
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case r := <-t.live:
		t.liveBytes.Add(-r.size)
		t.receive(r)
	case <-t.kick:
	case <-timer.C:
		if !retrying {
			t.idleCheck()
		}
	case <-t.lost:
		select {
		case <-t.done:
			return ErrClosed
		default:
		}
		t.err = t.closedErr()
		return t.err
	case <-t.done:
		return ErrClosed
	case <-ctx.Done():
		return t.ctxErr(ctx)
	}
	return nil
}

// busy reports whether a kind is to be read or verified.
func (t *Turn) busy() bool { return t.staleKind() >= 0 || t.settleKind() >= 0 }

// idleCheck reads every stream the turn is still followed on from its last
// record: a republished record can be lost with nothing after it to reveal
// the gap (a slow consumer, a reconnect, a leader change). Each check finding
// nothing doubles the wait before the next, up to tune.maxIdle; any record
// taken resets it.
func (t *Turn) idleCheck() {
	for k := range t.kinds {
		if k != kindEvent || !t.eventsDone {
			t.kinds[k].stale = true
		}
	}
	t.idle = min(2*t.idle, t.tune.maxIdle)
}

// readFailed decides what a failed read means: the end of Next (ctx done,
// the Turn closed, the connection closed) or a retry after a backoff.
func (t *Turn) readFailed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return t.ctxErr(ctx)
	}
	select {
	case <-t.done:
		return ErrClosed
	default:
	}
	if t.nc.IsClosed() {
		t.err = t.closedErr()
		return t.err
	}
	t.retry.failed(err)
	return nil
}

func (t *Turn) ctxErr(ctx context.Context) error { return t.retry.ctxErr(ctx) }

func (t *Turn) closedErr() error {
	return fmt.Errorf("client: follow %s/%s: %w", t.session, t.turn, jetstream.ErrConnectionClosed)
}

// Close unsubscribes the Turn. It is idempotent, and safe after Next
// returned io.EOF (which closes it already).
func (t *Turn) Close() {
	t.stop.Do(func() {
		close(t.done)
		for k := range t.kinds {
			if sub := t.kinds[k].sub; sub != nil {
				// Best effort: a closed connection has dropped it already.
				_ = sub.Unsubscribe()
			}
		}
	})
}

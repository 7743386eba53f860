package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/directget"
	"github.com/turnstream/turnstream/pkg/wire"
)

// The tap's timings.
const (
	// tapIdle is how long a Tap waits for a live record before it reads
	// the events stream's tail; the wait doubles up to maxTapIdle while
	// the reads find nothing.
	tapIdle    = 2 * time.Second
	maxTapIdle = 5 * time.Second
)

// TapOptions say which events a Tap delivers.
type TapOptions struct {
	// Session limits the Tap to one session's events. Default "": every
	// session's.
	Session string
	// After is the TURN_EVENTS sequence of the last event already seen
	// (Tap.Position, or an Update's StreamSeq): the Tap delivers the events
	// stored after it. Default 0: from the first event stored.
	After uint64
	// New starts after the last event stored when Tap is called, so only
	// events stored from then on are delivered. It cannot be combined with
	// After. Default false.
	New bool
}

// Validate reports options Tap rejects: a Session that is not a subject
// token (a *wire.ValidationError), or New with After.
func (o TapOptions) Validate() error {
	if o.Session != "" && !wire.ValidToken(o.Session) {
		return invalidToken(wire.ReasonInvalidSessionID, "session_id")
	}
	if o.New && o.After != 0 {
		return fmt.Errorf("%w: tap: New and After are exclusive", ErrInvalidOption)
	}
	return nil
}

// Tap follows the audit events stored in TURN_EVENTS, of every session or
// of one, in stream order, each once. Unlike a Turn it never ends: Next
// blocks until the next event is stored.
//
// A Tap holds no consumer on the server. It subscribes to the events' live
// subject (<prefix>.live.event.* or .live.event.<session>) as a doorbell
// only, and reads the events themselves with batch direct gets filtered by
// <prefix>.event.* (or .event.<session>), from the last event it took: a
// republished record that is lost (a slow consumer, a reconnect) delays an
// event until the next doorbell or the next tail read (after 2s without
// one, doubling up to 5s while nothing is found), and never loses it. The
// filter matches no workers' lease fence markers (<prefix>.event.=fence.<session>
// has one token more). Memory is bounded by one batch (256 events, 2 MiB).
//
// Next and Position must not be called concurrently; Close may be called
// from any goroutine.
type Tap struct {
	nc     *nats.Conn
	dg     *directget.Getter
	filter string // where the events are stored
	sub    *nats.Subscription
	tune   tuning

	// Filled by the subscription's handler.
	rung     atomic.Uint64 // the highest sequence a live record announced since the last ring taken
	ring     chan struct{} // a live record arrived
	lost     chan struct{} // closed when the subscription closed under the Tap
	lostOnce sync.Once
	skipped  atomic.Int64

	done chan struct{}
	stop sync.Once

	// State of Next, owned by its caller.
	last  uint64   // the sequence of the last event taken
	stale bool     // events after last may be stored: read them
	out   []Update // taken and not yet returned, at most one batch
	idle  time.Duration
	retry backoff
	err   error // sticky failure
}

// Tap starts following the events o names. Its subscription is in place
// (flushed) before it returns, so an event stored from then on is either
// announced to the Tap or found by its first read. It looks TURN_EVENTS up
// (STREAM.INFO), which reports a missing topology and, with o.New, gives
// the sequence to start after.
func (c *Client) Tap(ctx context.Context, o TapOptions) (*Tap, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	session := "*"
	if o.Session != "" {
		session = o.Session
	}
	t := &Tap{
		nc:     c.nc,
		dg:     c.dg,
		filter: c.subjects.Event(session),
		tune:   defaultTuning,
		ring:   make(chan struct{}, 1),
		lost:   make(chan struct{}),
		done:   make(chan struct{}),
		last:   o.After,
		stale:  true,
	}
	t.idle = t.tune.tapIdle
	sub, err := c.nc.Subscribe(c.subjects.LiveEvent(session), t.onLive)
	if err != nil {
		return nil, fmt.Errorf("client: tap %s: %w", t.filter, err)
	}
	sub.SetClosedHandler(t.onClosed)
	t.sub = sub
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cancelFlushTimeout)
		defer cancel()
	}
	if err := c.nc.FlushWithContext(ctx); err != nil {
		t.Close()
		return nil, fmt.Errorf("client: tap %s: %w", t.filter, err)
	}
	s, err := c.js.Stream(ctx, wire.StreamEvents)
	if err != nil {
		t.Close()
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, fmt.Errorf("client: stream %s (no worker has created the topology yet?): %w", wire.StreamEvents, err)
		}
		return nil, fmt.Errorf("client: stream %s: %w", wire.StreamEvents, err)
	}
	if o.New {
		t.last = s.CachedInfo().State.LastSeq
	}
	return t, nil
}

// Filter is the subject filter of the events the Tap reads.
func (t *Tap) Filter() string { return t.filter }

// Skipped counts the events that could not be decoded and were skipped.
func (t *Tap) Skipped() int { return int(t.skipped.Load()) }

// Position is the TURN_EVENTS sequence of the last event the Tap is done
// with: those Next returned. TapOptions.After resumes after it.
func (t *Tap) Position() uint64 {
	if len(t.out) > 0 {
		return t.out[0].StreamSeq - 1
	}
	return t.last
}

// onLive rings the doorbell: a live record announces that an event was
// stored, and its Nats-Sequence header how far to read. It runs on the
// subscription's goroutine and never blocks.
func (t *Tap) onLive(m *nats.Msg) {
	if t.tune.dropLive != nil && t.tune.dropLive(m) {
		return
	}
	seq, err := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
	if err != nil {
		seq = math.MaxUint64 // unknown: read
	}
	for {
		cur := t.rung.Load()
		if seq <= cur || t.rung.CompareAndSwap(cur, seq) {
			break
		}
	}
	select {
	case t.ring <- struct{}{}:
	default: // rung already; the reader takes the highest sequence
	}
}

// onClosed runs when the subscription closes: after Close, or when the
// connection closed under the Tap.
func (t *Tap) onClosed(string) {
	select {
	case <-t.done:
	default:
		t.lostOnce.Do(func() { close(t.lost) })
	}
}

// Next returns the next event stored on the Tap's filter (Update.Event and
// Update.StreamSeq are set), blocking until one is stored, ctx is done (an
// error wrapping ctx.Err(), naming the last failed read if reads were
// failing; the Tap stays usable) or the Tap is closed (ErrClosed).
//
// Reads that fail are retried until ctx ends. A closed connection is
// returned as an error wrapping jetstream.ErrConnectionClosed, and returned
// again by later calls.
func (t *Tap) Next(ctx context.Context) (Update, error) {
	for {
		if t.err != nil {
			return Update{}, t.err
		}
		if err := ctx.Err(); err != nil {
			return Update{}, t.retry.ctxErr(ctx)
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
		if t.stale && t.retry.due() {
			if err := t.read(ctx); err != nil {
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

// wait blocks until the doorbell rings for an event not read yet, a failed
// read is due again, or the Tap has been idle long enough to read the
// stream's tail (a lost live record with nothing after it rings nothing).
func (t *Tap) wait(ctx context.Context) error {
	d := t.idle
	if t.stale {
		d = time.Until(t.retry.at)
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-t.ring:
		if t.rung.Swap(0) > t.last {
			t.stale = true
		}
	case <-timer.C:
		if !t.stale {
			t.stale = true
			t.idle = min(2*t.idle, t.tune.maxTapIdle)
		}
	case <-t.lost:
		select {
		case <-t.done:
			return ErrClosed
		default:
		}
		t.err = fmt.Errorf("client: tap %s: %w", t.filter, jetstream.ErrConnectionClosed)
		return t.err
	case <-t.done:
		return ErrClosed
	case <-ctx.Done():
		return t.retry.ctxErr(ctx)
	}
	return nil
}

// read takes the events stored after the last one taken, one batch direct
// get at a time; the Tap is no longer stale once a batch ends with the
// last event stored.
func (t *Tap) read(ctx context.Context) error {
	ctx, cancel := readContext(ctx, t.done)
	defer cancel()
	caughtUp, err := t.dg.Batch(ctx, wire.StreamEvents, t.filter, t.last, func(m *jetstream.RawStreamMsg) bool {
		if m.Sequence <= t.last || !matchSubject(t.filter, m.Subject) {
			return false
		}
		t.take(m)
		return true
	})
	if err != nil {
		return fmt.Errorf("client: tap %s: %w", t.filter, err)
	}
	if caughtUp {
		t.stale = false
	}
	t.retry.succeeded()
	return nil
}

// take moves the Tap past a stored event and queues it for Next, unless it
// does not decode.
func (t *Tap) take(m *jetstream.RawStreamMsg) {
	t.last = m.Sequence
	t.idle = t.tune.tapIdle
	ev := new(wire.SessionEvent)
	if err := wire.Decode(m.Header.Get(wire.HeaderContentType), m.Data, ev); err != nil {
		t.skipped.Add(1)
		return
	}
	t.out = append(t.out, Update{Event: ev, StreamSeq: m.Sequence})
}

// readFailed decides what a failed read means: the end of Next (ctx done,
// the Tap closed, the connection closed) or a retry after a backoff.
func (t *Tap) readFailed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return t.retry.ctxErr(ctx)
	}
	select {
	case <-t.done:
		return ErrClosed
	default:
	}
	if t.nc.IsClosed() {
		t.err = fmt.Errorf("client: tap %s: %w", t.filter, jetstream.ErrConnectionClosed)
		return t.err
	}
	t.retry.failed(err)
	return nil
}

// Close unsubscribes the Tap. It is idempotent.
func (t *Tap) Close() {
	t.stop.Do(func() {
		close(t.done)
		if t.sub != nil {
			// Best effort: a closed connection has dropped it already.
			_ = t.sub.Unsubscribe()
		}
	})
}

// matchSubject reports whether subject matches filter, whose tokens may be
// the single-token wildcard "*".
func matchSubject(filter, subject string) bool {
	for {
		ft, frest, fmore := strings.Cut(filter, ".")
		st, srest, smore := strings.Cut(subject, ".")
		if st == "" || (ft != "*" && ft != st) || fmore != smore {
			return false
		}
		if !fmore {
			return true
		}
		filter, subject = frest, srest
	}
}

package client

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/pkg/wire"
)

// The follower's bounds and timings (read.go has those of the reads).
const (
	// liveRecords and liveBytes bound the republished records waiting for
	// Next. A record that would exceed either is dropped and its stream
	// read again by direct get from the last record taken: an overflow
	// costs reads, never memory.
	liveRecords = 512
	liveBytes   = 8 << 20
	// idleCheck is how long Next waits for a live record before it reads
	// the streams' tails; the wait doubles up to maxIdleCheck while the
	// checks find nothing.
	idleCheck    = time.Second
	maxIdleCheck = 8 * time.Second
)

// tuning is what a Turn or a Tap takes from the constants above and in
// tap.go; tests shrink it (export_test.go).
type tuning struct {
	liveRecords int
	liveBytes   int64
	idle        time.Duration
	maxIdle     time.Duration
	tapIdle     time.Duration
	maxTapIdle  time.Duration
	// dropLive, when set, is asked about every live record before it is
	// buffered (a Turn) or rings (a Tap); true drops it, as a lost
	// republish would be.
	dropLive func(*nats.Msg) bool
}

var defaultTuning = tuning{
	liveRecords: liveRecords,
	liveBytes:   liveBytes,
	idle:        idleCheck,
	maxIdle:     maxIdleCheck,
	tapIdle:     tapIdle,
	maxTapIdle:  maxTapIdle,
}

// The three record kinds a Turn follows.
const (
	kindChunk = iota
	kindMessage
	kindEvent
	numKinds
)

var kindNames = [numKinds]string{"chunks", "messages", "events"}

// follower is a Turn's view of one stream subject.
type follower struct {
	stream  string // TURN_CHUNKS, TURN_MESSAGES or TURN_EVENTS
	subject string // where the records are stored
	live    string // where the stream republishes them
	sub     *nats.Subscription
	// last is the stream sequence of the last record taken: delivered,
	// queued for Next, or passed over.
	last uint64
	// stale means records after last may be stored that were not taken:
	// at the start, after a gap, an overflow or an idle check. The next
	// read fetches from last until it has everything stored.
	stale bool
	// settle asks the stream leader for the subject's last record (want):
	// direct gets may be served by a replica that lags the leader, so
	// before the terminal event the Turn reads up to what the leader
	// stored.
	settle bool
	want   uint64
	// overflow is set by the subscription when it dropped a record.
	overflow atomic.Bool
}

// liveRecord is a republished record waiting for Next.
type liveRecord struct {
	kind int
	msg  *nats.Msg
	size int64
}

// follow subscribes to a turn's live subjects and returns a Turn positioned
// after from. The subscriptions are in place (flushed) before it returns,
// so a record stored from then on is either republished to the Turn or
// found by its first reads.
func (c *Client) follow(ctx context.Context, session, turn string, from Position) (*Turn, error) {
	tune := defaultTuning
	t := &Turn{
		session: session,
		turn:    turn,
		nc:      c.nc,
		dg:      c.dg,
		tune:    tune,
		live:    make(chan liveRecord, tune.liveRecords),
		kick:    make(chan struct{}, 1),
		lost:    make(chan struct{}),
		done:    make(chan struct{}),
		idle:    tune.idle,
	}
	t.kinds[kindChunk] = follower{stream: wire.StreamChunks, subject: c.subjects.Chunk(session, turn), live: c.subjects.LiveChunk(session, turn)}
	t.kinds[kindMessage] = follower{stream: wire.StreamMessages, subject: c.subjects.Message(session), live: c.subjects.LiveMessage(session)}
	t.kinds[kindEvent] = follower{stream: wire.StreamEvents, subject: c.subjects.Event(session), live: c.subjects.LiveEvent(session)}
	t.rewind(from)
	for k := range t.kinds {
		f := &t.kinds[k]
		sub, err := c.nc.Subscribe(f.live, t.onLive(k))
		if err != nil {
			t.Close()
			return nil, fmt.Errorf("client: follow %s of %s/%s: %w", kindNames[k], session, turn, err)
		}
		sub.SetClosedHandler(t.onClosed)
		f.sub = sub
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cancelFlushTimeout)
		defer cancel()
	}
	if err := c.nc.FlushWithContext(ctx); err != nil {
		t.Close()
		return nil, fmt.Errorf("client: follow %s/%s: %w", session, turn, err)
	}
	return t, nil
}

// rewind positions a Turn that has read nothing yet after from, with every
// stream to be read up to what is stored.
func (t *Turn) rewind(from Position) {
	for k, seq := range [numKinds]uint64{from.Chunks, from.Messages, from.Events} {
		t.kinds[k].last = seq
		t.kinds[k].stale = true
	}
}

// onLive buffers the republished records of one kind for Next, dropping
// those beyond the bounds (the stream is then read again by direct get).
// It runs on the subscription's goroutine and never blocks.
func (t *Turn) onLive(kind int) nats.MsgHandler {
	return func(m *nats.Msg) {
		if t.tune.dropLive != nil && t.tune.dropLive(m) {
			return
		}
		n := int64(len(m.Data))
		if t.liveBytes.Add(n) > t.tune.liveBytes {
			t.liveBytes.Add(-n)
			t.overflowed(kind)
			return
		}
		select {
		case t.live <- liveRecord{kind: kind, msg: m, size: n}:
		default:
			t.liveBytes.Add(-n)
			t.overflowed(kind)
		}
	}
}

func (t *Turn) overflowed(kind int) {
	t.kinds[kind].overflow.Store(true)
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// onClosed runs when a subscription closes: after Close, or when the
// connection closed under the Turn.
func (t *Turn) onClosed(string) {
	select {
	case <-t.done:
	default:
		t.lostOnce.Do(func() { close(t.lost) })
	}
}

// absorbOverflow marks the kinds whose live records were dropped stale.
func (t *Turn) absorbOverflow() {
	for k := range t.kinds {
		if t.kinds[k].overflow.Swap(false) && (k != kindEvent || !t.eventsDone) {
			t.kinds[k].stale = true
		}
	}
}

// staleKind is a kind to read, taking turns between kinds, or -1.
func (t *Turn) staleKind() int {
	for i := range numKinds {
		k := (t.scan + i) % numKinds
		if t.kinds[k].stale {
			return k
		}
	}
	return -1
}

// settleKind is a kind to verify with its stream leader, or -1.
func (t *Turn) settleKind() int {
	for k := range t.kinds {
		if t.kinds[k].settle {
			return k
		}
	}
	return -1
}

// settled reports whether a kind has every record its stream leader said
// it stored.
func (f *follower) settled() bool { return !f.stale && !f.settle && f.last >= f.want }

// receive takes a republished record if it follows the last record taken
// of its subject. Its Nats-Last-Sequence header is the stream sequence of
// the subject's previous stored record: when that is later than the last
// record taken, records were missed, and the kind is read by direct get
// (this record included) instead.
func (t *Turn) receive(r liveRecord) {
	f := &t.kinds[r.kind]
	h := r.msg.Header
	if h.Get(jetstream.StreamHeader) != f.stream || h.Get(jetstream.SubjectHeader) != f.subject {
		return // not a republished record of this subject
	}
	seq, err := strconv.ParseUint(h.Get(jetstream.SequenceHeader), 10, 64)
	if err != nil || seq == 0 {
		return
	}
	prev, err := strconv.ParseUint(h.Get(jetstream.LastSequenceHeader), 10, 64)
	if err != nil {
		return
	}
	switch {
	case seq <= f.last: // taken already
	case r.kind == kindEvent && t.eventsDone:
	case f.stale: // the next read fetches it
	case prev > f.last:
		f.stale = true // a gap
	default:
		t.take(r.kind, seq, h, r.msg.Data)
	}
}

// read takes the records of one kind's subject stored after the last one
// taken, one batch direct get at a time. The kind is no longer stale once
// a batch ends with the subject's last stored record.
func (t *Turn) read(ctx context.Context, kind int) error {
	t.scan = (kind + 1) % numKinds
	f := &t.kinds[kind]
	ctx, cancel := readContext(ctx, t.done)
	defer cancel()
	caughtUp, err := t.dg.Batch(ctx, f.stream, f.subject, f.last, func(m *jetstream.RawStreamMsg) bool {
		if m.Subject != f.subject || m.Sequence <= f.last {
			return false
		}
		t.take(kind, m.Sequence, m.Header, m.Data)
		return true
	})
	if err != nil {
		return t.readErr(kind, err)
	}
	if caughtUp {
		return t.readAll(kind)
	}
	t.retry.succeeded()
	return nil
}

// readAll ends the reads of a kind that has what was stored when the last
// read arrived, or what the stream leader said it stored, if that is more.
func (t *Turn) readAll(kind int) error {
	f := &t.kinds[kind]
	f.stale = false
	if f.last < f.want {
		f.settle = true // ask the leader again, it may have lost records since
		return t.readErr(kind, errBehind)
	}
	t.retry.succeeded()
	return nil
}

// apiPrefix is the JetStream API prefix of the client's JetStream context
// (jetstream.New without a domain or prefix).
const apiPrefix = "$JS.API."

// verify asks the stream leader for the last record stored on a kind's
// subject (a direct get may be served by a lagging replica; the stream
// message get API is served by the leader), and reads up to it.
func (t *Turn) verify(ctx context.Context, kind int) error {
	f := &t.kinds[kind]
	ctx, cancel := readContext(ctx, t.done)
	defer cancel()
	req, _ := json.Marshal(struct {
		LastFor string `json:"last_by_subj"`
	}{f.subject})
	m, err := t.nc.RequestWithContext(ctx, apiPrefix+"STREAM.MSG.GET."+f.stream, req)
	if err != nil {
		return t.readErr(kind, err)
	}
	var resp struct {
		Message *struct {
			Sequence uint64 `json:"seq"`
		} `json:"message"`
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return t.readErr(kind, fmt.Errorf("stream message get: %w", err))
	}
	switch {
	case resp.Error != nil && resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		f.want = 0
	case resp.Error != nil:
		return t.readErr(kind, resp.Error)
	case resp.Message == nil:
		return t.readErr(kind, jetstream.ErrInvalidJetStreamResponse)
	default:
		f.want = resp.Message.Sequence
	}
	f.settle = false
	if f.want > f.last {
		f.stale = true
	}
	t.retry.succeeded()
	return nil
}

func (t *Turn) readErr(kind int, err error) error {
	return fmt.Errorf("client: follow %s of %s/%s: %w", kindNames[kind], t.session, t.turn, err)
}

// take moves a kind past a stored record and queues its update for Next,
// unless it belongs to another turn or does not decode. The terminal event
// is held back, and chunks and messages are read up to what their stream
// leaders stored (everything of the turn is stored before its terminal
// event).
func (t *Turn) take(kind int, seq uint64, h nats.Header, data []byte) {
	t.kinds[kind].last = seq
	t.idle = t.tune.idle
	if kind == kindEvent && t.eventsDone {
		return // nothing of the turn follows its terminal event
	}
	u := Update{StreamSeq: seq}
	ct := h.Get(wire.HeaderContentType)
	keep := true
	var err error
	switch kind {
	case kindChunk:
		// The subject names the turn: every chunk on it is the turn's.
		u.Chunk = new(wire.Chunk)
		err = wire.Decode(ct, data, u.Chunk)
	case kindMessage:
		u.Message = new(wire.Message)
		err = wire.Decode(ct, data, u.Message)
		keep = u.Message.TurnID == t.turn
	case kindEvent:
		u.Event = new(wire.SessionEvent)
		err = wire.Decode(ct, data, u.Event)
		keep = u.Event.TurnID == t.turn
	}
	switch {
	case err != nil:
		t.skipped.Add(1)
	case !keep:
	case kind == kindEvent && u.Event.Terminal():
		t.terminal = &u
		t.eventsDone = true
		t.kinds[kindEvent].stale = false
		t.kinds[kindChunk].settle = true
		t.kinds[kindMessage].settle = true
	default:
		t.out = append(t.out, u)
	}
}

// kind is the record kind of an update.
func (u Update) kind() int {
	switch {
	case u.Chunk != nil:
		return kindChunk
	case u.Message != nil:
		return kindMessage
	}
	return kindEvent
}

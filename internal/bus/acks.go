package bus

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Ack accounting. A turn's chunks, raw frames and events are published
// with core NATS (nc.PublishMsg) and a reply subject under one wildcard
// subscription of the connection; JetStream answers each with its
// PubAck there. Instead of a future, two channels and a timer per publish
// (jetstream.PublishMsgAsync), a publish is one entry in a map: its id
// (the reply subject's last token) names the writer whose count it is in.
// The reply decrements that count and keeps the writer's first failure;
// TurnWriter.Flush waits for its count to reach zero. One sweeper per
// connection fails the entries whose ack never comes.

// AckOptions configure the ack accounting of a connection: the
// publishes of every TurnWriter of every Bus on it.
type AckOptions struct {
	// Window bounds the publishes of the connection awaiting their ack.
	// A publish beyond it waits for room (at most StallWait), never fails
	// at once. Each costs an entry in a map (and the server's reply while
	// it is buffered) until its ack. Default DefaultAckWindow; at most
	// nats.DefaultSubPendingMsgsLimit, the replies the subscription
	// buffers before it drops one.
	Window int
	// Timeout fails a publish whose ack has not come after it (the record
	// may be stored or not; its delivery is resumed by a redelivery).
	// Default StallWait.
	Timeout time.Duration
	// Acked, when set, is given the time from each publish to its ack,
	// for every record the stream stored (the publish-ack lag a metrics
	// histogram records). It is called outside the tracker's lock, on the
	// connection's reply goroutine: it must be cheap and must not block.
	// Default nil.
	Acked func(lag time.Duration)
}

// DefaultAckWindow is the window of a connection nobody configured:
// nats.go's default for asynchronous publishes, rounded up.
const DefaultAckWindow = 4096

// Validate reports options that cannot be used.
func (o AckOptions) Validate() error {
	if o.Window < 0 || o.Timeout < 0 {
		return fmt.Errorf("bus: ack options: window %d and timeout %s must not be negative", o.Window, o.Timeout)
	}
	if o.Window > nats.DefaultSubPendingMsgsLimit {
		return fmt.Errorf("bus: ack options: window %d over %d, the replies a subscription buffers", o.Window, nats.DefaultSubPendingMsgsLimit)
	}
	return nil
}

func (o AckOptions) withDefaults() AckOptions {
	if o.Window == 0 {
		o.Window = DefaultAckWindow
	}
	if o.Timeout == 0 {
		o.Timeout = StallWait
	}
	return o
}

// TrackAcks configures the bus's ack accounting (every writer of the bus
// shares one window). Without a call the defaults hold.
func (b *Bus) TrackAcks(o AckOptions) error {
	if err := o.Validate(); err != nil {
		return err
	}
	b.acks.configure(o.withDefaults())
	return nil
}

// ackKind is the kind of record a counted publish is; a writer counts
// each kind apart as well, for the kinds published one at a time
// (TurnWriter.serial).
type ackKind uint8

const (
	kindChunk ackKind = iota
	kindRaw
	kindEvent
	numKinds
)

// allKinds asks ackTracker.idle for every kind at once.
const allKinds = numKinds

// kindNames are the fenced kinds (FencedKinds) of each ackKind.
var kindNames = [numKinds]string{kindChunk: "chunk", kindRaw: "raw", kindEvent: "event"}

// ackGroup counts one writer's publishes awaiting their ack and keeps the
// first failure among them. Its fields are guarded by the tracker's mu.
type ackGroup struct {
	n     int
	kinds [numKinds]int
	// err is the first failure: sticky, since the writer's records now
	// have a hole the delivery must not end the turn over.
	err error
	// wake is closed when n, or the count of a kind, falls to zero while
	// someone waits (idle); nil when nobody does.
	wake chan struct{}
}

func (g *ackGroup) outstanding(kind ackKind) int {
	if kind == allKinds {
		return g.n
	}
	return g.kinds[kind]
}

// pendingAck is a publish awaiting its ack.
type pendingAck struct {
	g       *ackGroup
	kind    ackKind
	subject string        // for the error, shared with the writer: no copy
	at      time.Duration // when it was published, on the tracker's clock
}

// ackTracker counts the publish acks of one connection.
type ackTracker struct {
	nc *nats.Conn
	// prefix is the reply subject of every publish but its last token,
	// the publish's id: a fresh inbox of the connection, so a custom inbox
	// prefix (a deploy's _INBOX_<user>) holds for it too.
	prefix string
	start  time.Time // the clock's origin (monotonic)

	mu      sync.Mutex
	window  int
	timeout time.Duration
	next    uint64
	// pending holds every publish awaiting its ack; at most window of
	// them, so the subscription's buffer of replies (nats.go's default
	// limit, which bounds the window) never drops one.
	pending map[uint64]pendingAck
	// room is closed when an entry leaves a full window while a publish
	// waits; nil when none does.
	room chan struct{}
	// err is set when the connection closed: every later publish fails
	// with it.
	err error
	// acked is AckOptions.Acked.
	acked func(lag time.Duration)
}

// startTracker subscribes to the tracker's reply subjects and starts its
// sweeper, which lives until the connection closes.
func startTracker(nc *nats.Conn, o AckOptions) (*ackTracker, error) {
	t := &ackTracker{
		nc: nc, prefix: nc.NewInbox() + ".", start: time.Now(),
		window: o.Window, timeout: o.Timeout, pending: map[uint64]pendingAck{},
	}
	// Listen before subscribing: a close in between is seen either way.
	status := nc.StatusChanged(nats.RECONNECTING, nats.CLOSED)
	// The subscription ends with the connection, as the sweeper does.
	if _, err := nc.Subscribe(t.prefix+"*", t.reply); err != nil {
		nc.RemoveStatusListener(status)
		return nil, fmt.Errorf("bus: subscribe to publish acks: %w", err)
	}
	go t.sweep(status)
	return t, nil
}

// configure applies options; a grown window lets waiting publishes in.
func (t *ackTracker) configure(o AckOptions) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.window, t.timeout, t.acked = o.Window, o.Timeout, o.Acked
	t.wakeRoom(true)
}

// sweepsPerTimeout is how often per timeout the sweeper looks for
// expired publishes: one fails between Timeout and 1.25 Timeout after it
// was published.
const sweepsPerTimeout = 4

// sweep fails what no ack will settle: on a reconnect every outstanding
// publish (their replies went to the lost connection), each sweep the
// publishes older than the timeout (an ack lost without a disconnect: a
// leader change, a dropped reply). It returns when the connection closes,
// failing everything left.
func (t *ackTracker) sweep(status chan nats.Status) {
	defer t.nc.RemoveStatusListener(status)
	timer := time.NewTimer(t.period())
	defer timer.Stop()
	for {
		select {
		case s, ok := <-status:
			if !ok || s == nats.CLOSED {
				t.close()
				return
			}
			t.failAll(nats.ErrDisconnected)
		case <-timer.C:
			if t.nc.IsClosed() {
				t.close()
				return
			}
			t.expire()
			timer.Reset(t.period())
		}
	}
}

func (t *ackTracker) period() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return max(t.timeout/sweepsPerTimeout, time.Millisecond)
}

// expire fails the publishes whose ack is overdue.
func (t *ackTracker) expire() {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Since(t.start)
	for id, p := range t.pending {
		if now-p.at >= t.timeout {
			t.settle(id, p, fmt.Errorf("%w after %s", jetstream.ErrAsyncPublishTimeout, t.timeout))
		}
	}
}

// failAll fails every outstanding publish with err.
func (t *ackTracker) failAll(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, p := range t.pending {
		t.settle(id, p, err)
	}
}

// close ends the tracker with its connection: what is outstanding fails,
// and every later publish too.
func (t *ackTracker) close() {
	t.mu.Lock()
	t.err = nats.ErrConnectionClosed
	for id, p := range t.pending {
		t.settle(id, p, t.err)
	}
	t.wakeRoom(true)
	t.mu.Unlock()
}

// publish sends m with one of the tracker's reply subjects, counted in g
// as kind until its ack, its failure or its timeout settles it. A full
// window makes it wait for room, at most StallWait (or until ctx ends).
// It returns the error of a message that was not sent; g counts nothing
// of it.
func (t *ackTracker) publish(ctx context.Context, g *ackGroup, kind ackKind, m *nats.Msg) error {
	t.mu.Lock()
	if err := t.waitRoom(ctx); err != nil {
		t.mu.Unlock()
		return err
	}
	id := t.next
	t.next++
	t.pending[id] = pendingAck{g: g, kind: kind, subject: m.Subject, at: time.Since(t.start)}
	g.n++
	g.kinds[kind]++
	t.mu.Unlock()

	var buf [128]byte // the reply subject is built here; one allocation for its string
	m.Reply = string(strconv.AppendUint(append(buf[:0], t.prefix...), id, 36))
	// PublishMsg copies m into the connection's write buffer (or its
	// reconnect buffer) before it returns: nothing of m is kept, and
	// nothing is ever sent again.
	if err := t.nc.PublishMsg(m); err != nil {
		t.mu.Lock()
		if p, ok := t.pending[id]; ok {
			t.settle(id, p, nil) // not sent: the caller has the error
		}
		t.mu.Unlock()
		return err
	}
	return nil
}

// waitRoom waits until the window has room; t.mu is held on entry and on
// return (it is released while waiting).
func (t *ackTracker) waitRoom(ctx context.Context) error {
	if t.err != nil {
		return t.err
	}
	if len(t.pending) < t.window {
		return nil
	}
	stall := time.NewTimer(StallWait) // only for a full window
	defer stall.Stop()
	for len(t.pending) >= t.window {
		if t.room == nil {
			t.room = make(chan struct{})
		}
		room := t.room
		t.mu.Unlock()
		select {
		case <-room:
		case <-stall.C:
			t.mu.Lock()
			return fmt.Errorf("%w: no room in the window of %d unacknowledged publishes after %s", jetstream.ErrTooManyStalledMsgs, t.window, StallWait)
		case <-ctx.Done():
			t.mu.Lock()
			return ctx.Err()
		}
		t.mu.Lock()
		if t.err != nil {
			return t.err
		}
	}
	return nil
}

// wakeRoom lets the publishes waiting for room look again: when the
// window has room, or always (a closed tracker, a changed window). t.mu
// is held.
func (t *ackTracker) wakeRoom(always bool) {
	if t.room != nil && (always || len(t.pending) < t.window) {
		close(t.room)
		t.room = nil
	}
}

// settle removes a publish from the window and its writer's counts;
// err, if any, becomes the writer's failure unless it has one. t.mu is
// held.
func (t *ackTracker) settle(id uint64, p pendingAck, err error) {
	delete(t.pending, id)
	g := p.g
	g.n--
	g.kinds[p.kind]--
	if err != nil && g.err == nil {
		g.err = fmt.Errorf("bus: publish %s: %w", p.subject, fenced(err))
	}
	if g.wake != nil && (g.n == 0 || g.kinds[p.kind] == 0) {
		close(g.wake)
		g.wake = nil
	}
	t.wakeRoom(false)
}

// fail makes err g's failure unless it has one.
func (t *ackTracker) fail(g *ackGroup, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if g.err == nil {
		g.err = err
	}
}

// idle waits until g has no publish of kind (allKinds: of any kind)
// awaiting its ack, or ctx ends. It returns g's failure, if any, else
// ctx's error when ctx ended first: the counts stay, so a later call
// waits for the same publishes again.
func (t *ackTracker) idle(ctx context.Context, g *ackGroup, kind ackKind) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for g.outstanding(kind) > 0 {
		if g.wake == nil {
			g.wake = make(chan struct{})
		}
		wake := g.wake
		t.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			t.mu.Lock()
			if g.err != nil {
				return g.err
			}
			return ctx.Err()
		}
		t.mu.Lock()
	}
	return g.err
}

// reply settles the publish an ack answers. An ack of a publish already
// settled (timed out, failed by a reconnect) is dropped.
func (t *ackTracker) reply(m *nats.Msg) {
	if len(m.Subject) <= len(t.prefix) {
		return
	}
	id, err := strconv.ParseUint(m.Subject[len(t.prefix):], 36, 64)
	if err != nil {
		return
	}
	res := ackResult(m)
	t.mu.Lock()
	p, ok := t.pending[id]
	if ok {
		t.settle(id, p, res)
	}
	acked := t.acked
	t.mu.Unlock()
	if ok && res == nil && acked != nil {
		acked(time.Since(t.start) - p.at)
	}
}

var (
	ackStored   = []byte(`{"stream":"`)
	ackErrorKey = []byte(`"error":`)
)

// ackResult reads a PubAck: nil for a stored record, the server's
// refusal as a *jetstream.APIError (so fenced and isWrongLastSequence
// classify it), jetstream.ErrNoStreamResponse when no stream took the
// subject. The common ack, {"stream":"…","seq":…}, is recognized without
// decoding it.
func ackResult(m *nats.Msg) error {
	d := m.Data
	if len(d) == 0 && m.Header.Get("Status") == "503" {
		return jetstream.ErrNoStreamResponse
	}
	if bytes.HasPrefix(d, ackStored) && len(d) > len(ackStored)+1 && d[len(ackStored)] != '"' && d[len(d)-1] == '}' &&
		!bytes.Contains(d, ackErrorKey) {
		return nil
	}
	var ack struct {
		Stream string              `json:"stream"`
		Error  *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(d, &ack); err != nil {
		return jetstream.ErrInvalidJSAck
	}
	if ack.Error != nil {
		return ack.Error
	}
	if ack.Stream == "" {
		return jetstream.ErrInvalidJSAck
	}
	return nil
}

package bus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/pkg/wire"
)

// A session lease makes one delivery of one turn the session's only writer.
//
// The lease is a TURN_STATE record (LeaseKey) advanced only by
// compare-and-set on its revision. Taking it fences every earlier holder in
// every place a turn writes:
//
//   - TURN_STATE: every state write carries the lease's revision as the
//     expected last revision of the lease key, so the server refuses it once
//     another delivery took the lease (no revision moves while it is held);
//   - TURN_MESSAGES, TURN_CHUNKS, TURN_RAW and TURN_EVENTS: the holder
//     writes a fence marker, carrying its epoch, on the stream's fence
//     subject of the session (<prefix>.<kind>.=fence.<session>), and every
//     record it publishes there carries the marker's sequence as the
//     expected last sequence of that subject. A later holder's marker moves the sequence,
//     so the server refuses what an earlier holder still tries to write, and
//     followers, who read only stored records, never see it.
//
// Markers only move forward: a holder overwrites a marker only if it carries
// a smaller epoch (compare-and-set on the marker's sequence), so two
// takeovers racing converge on the later epoch in every stream, and nothing
// of an earlier epoch is stored after a later epoch's marker. Everything a
// holder reads (the session log, the chunk tail) it reads after its markers
// are written, so it builds on all that earlier holders stored.
//
// The lease is renewed by the delivery's own heartbeat: while a worker runs
// the turn it keeps the request from being redelivered; when it dies (or is
// paused past the ack wait) the request is redelivered and the new delivery
// takes the lease over. Dispatches of tool calls are not fenced by the
// server; they are safe without it: a call is dispatched only after the
// message that made it was appended under the fence, its dispatch is
// deduplicated by the call's identity, and tool workers claim each call
// before running it (pkg/toolworker).
type Lease struct {
	bus     *Bus
	state   *State
	js      jetstream.JetStream
	session string
	// rev is the lease key's revision while held: the fence of state writes.
	rev uint64
	rec LeaseRecord
	// fences holds the sequence of this holder's marker per fenced kind.
	fences  map[string]uint64
	subj    map[string]string
	headers map[string]fenceHeader
	// view is the session as the holder read it: state reads of the
	// session are served from it, and state writes recorded in it.
	view *Session
	// logSeq is the stream sequence of the session log's last message:
	// as read, then as the holder's appends leave it (appended).
	logSeq atomic.Uint64
}

// tag names, on a message the holder appends, the request it runs
// (wire.HeaderRequest): a later delivery of the request tells the turn's
// messages from those of another request with the same turn id.
func (l *Lease) tag(h nats.Header) {
	h[wire.HeaderRequest] = []string{strconv.FormatUint(l.rec.Seq, 10)}
}

// appended records the stream sequence of a message the holder appended.
func (l *Lease) appended(seq uint64) { l.logSeq.Store(seq) }

// LeaseRecord is the value of a session's lease key.
type LeaseRecord struct {
	V int `json:"v"`
	// Epoch increases by one at every take; markers carry it.
	Epoch uint64 `json:"epoch"`
	// Turn and Seq identify the request (its submit-stream sequence) the
	// lease was taken for.
	Turn string `json:"turn"`
	Seq  uint64 `json:"seq"`
	// Deliveries counts the takes for this request: the durable count of
	// its deliveries that ran, which a restarted server cannot reset.
	Deliveries int `json:"deliveries"`
	// Owner names the worker process that took it.
	Owner string `json:"owner"`
	// Fences are the marker sequences the last holder wrote (as of its
	// release), the expected sequences of the next take's markers.
	Fences map[string]uint64 `json:"fences,omitempty"`
	// Released is set by the holder's release: its turn ended and it
	// writes nothing more. LogSeq is then the stream sequence of the
	// session log's last message as it knew it.
	Released bool   `json:"released,omitempty"`
	LogSeq   uint64 `json:"log_seq,omitempty"`
}

// released reports whether the lease was released with a marker in every
// fenced stream: the next take may keep them.
func (r LeaseRecord) released() bool {
	if !r.Released {
		return false
	}
	for _, kind := range FencedKinds {
		if r.Fences[kind] == 0 {
			return false
		}
	}
	return true
}

// FencedKinds are the streams a lease fences with markers.
var FencedKinds = []string{"message", "chunk", "raw", "event"}

// LeaseKey is the TURN_STATE key of a session's lease.
func LeaseKey(session string) string { return session + ".=lease" }

// stateSubject is the subject a TURN_STATE key is stored on.
func stateSubject(key string) string { return "$KV." + StateBucket + "." + key }

// FenceSubject is the subject of a session's fence marker in the stream of
// kind ("message", "chunk", "raw" or "event"). "=" never appears in a
// session token, so it is no record's subject. Message and event markers
// are not republished (their subjects have a token more than the
// records'), nor is anything of TURN_RAW; a chunk marker is, to
// turn.live.chunk.=fence.<session>, which no follower of a turn
// subscribes to.
func FenceSubject(s wire.Subjects, kind, session string) string {
	return strings.TrimSuffix(s.All(kind), ">") + "=fence." + session
}

// fenceMarker is the body of a fence marker.
type fenceMarker struct {
	Epoch uint64 `json:"epoch"`
	Turn  string `json:"turn"`
}

// maxMarkerRaces bounds how often a take retries a marker another take
// moved meanwhile.
const maxMarkerRaces = 8

// TakeLease reads the session and takes its lease (ReadSession, then Take).
func (b *Bus) TakeLease(ctx context.Context, state *State, session, turn string, seq uint64, owner string) (*Lease, error) {
	s, err := b.ReadSession(ctx, session)
	if err != nil {
		return nil, err
	}
	l, _, err := b.Take(ctx, state, s, turn, seq, owner, nil)
	return l, err
}

// Take makes this delivery of the request (turn, seq) the session's
// only writer: it advances the lease by compare-and-set and fences every
// earlier holder. owner names the worker process. It fails with ErrFenced
// when a later take overtook it.
//
// s is the session as read before the take (ReadSession); the take starts
// from the lease it holds. It returns the session the holder builds on,
// which holds everything an earlier holder stored:
//
//   - after a release (the usual case: the session's previous turn ended),
//     nobody can write under the earlier lease any more, and its markers
//     still fence every holder before it, so the take writes no markers
//     and keeps the release's; s is complete once its log reaches the
//     last message the release recorded (LeaseRecord.LogSeq), and its
//     state entries are complete because the compare-and-set succeeded on
//     the revision s holds;
//   - after a holder that did not release (it died, or is paused), the take
//     writes its markers and reads the session again after them;
//   - over a session read with no lease and no marker (its first turn),
//     nobody could have written since the read: the take writes its
//     markers and keeps the read, unless a marker was not where it
//     expected (another holder appeared), and then reads again.
//
// admit, when set, says whether the request is still this delivery's to
// run (it may wait for the answer); an error stops the take before it
// fences any other holder, and is returned. Over a release the take fences
// nobody, so admit is awaited after the compare-and-set (the two round
// trips overlap); otherwise before it.
func (b *Bus) Take(ctx context.Context, state *State, s *Session, turn string, seq uint64, owner string, admit func() error) (*Lease, *Session, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*opTimeout) // a take is a few requests
	defer cancel()
	admit = once(admit)
	key := LeaseKey(s.Name)
	session := s.Name
	for race := 0; ; race++ {
		var (
			prev       LeaseRecord
			rev        uint64
			known      bool
			err        error
			fromCached = race == 0
		)
		if fromCached {
			prev, rev, known = leaseOf(s)
		} else if prev, rev, known, err = readLease(ctx, state, key); err != nil {
			return nil, nil, fmt.Errorf("bus: lease of %s: %w", session, err)
		}
		keep := known && prev.released() && fromCached && b.markersKept(s, prev)
		// A session read with no lease and no marker has no holder that
		// can write to it (every write needs one or the other).
		fresh := rev == 0 && !known && len(s.markers) == 0
		if !keep {
			if err := admit(); err != nil {
				return nil, nil, err
			}
		}
		rec := LeaseRecord{V: 1, Epoch: prev.Epoch + 1, Turn: turn, Seq: seq, Deliveries: 1, Owner: owner, Fences: prev.Fences}
		if prev.Turn == turn && prev.Seq == seq {
			rec.Deliveries = prev.Deliveries + 1
		}
		data, _ := json.Marshal(rec) // plain fields: cannot fail
		if rev == 0 {
			rev, err = state.kv.Create(ctx, key, data)
		} else {
			rev, err = state.kv.Update(ctx, key, data, rev)
		}
		if errors.Is(err, jetstream.ErrKeyExists) || isWrongLastSequence(err) {
			if fromCached {
				// The session as read is behind the lease (another worker
				// took or released it since): read the lease itself.
				b.cache.invalidate(session)
				continue
			}
			// The key moved since it was read: a newer take fences this
			// one, but the previous holder's release (after its ack, just
			// when this request became the session's first) does not.
			cur, _, _, rerr := readLease(ctx, state, key)
			if rerr == nil && cur.Epoch <= prev.Epoch && race < maxMarkerRaces {
				continue
			}
			return nil, nil, fmt.Errorf("%w: lease of %s taken by another delivery", ErrFenced, session)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("bus: lease of %s: %w", session, err)
		}
		s.stored(key, Entry{Value: data, Revision: rev})
		l := &Lease{bus: b, state: state, js: b.js, session: session, rev: rev, rec: rec, fences: map[string]uint64{}, subj: map[string]string{}, view: s}
		for _, kind := range FencedKinds {
			l.subj[kind] = FenceSubject(b.subjects, kind, session)
		}
		if keep {
			if err := admit(); err != nil {
				// Nothing was fenced: the lease is left taken, unreleased,
				// and the owner's take writes markers over it.
				return nil, nil, err
			}
			maps.Copy(l.fences, prev.Fences)
			l.fenceHeaders()
			view, err := b.complete(ctx, s, prev.LogSeq)
			if err != nil {
				return nil, nil, err
			}
			l.view = view
			l.logSeq.Store(view.Log.LastStreamSeq)
			return l, view, nil
		}
		raced, err := l.mark(ctx)
		var later *laterEpoch
		if !known && errors.As(err, &later) {
			// The lease key was lost (deleted, expired, unreadable) while
			// the markers kept their epochs: carry the epoch above them.
			l.rec.Epoch = later.epoch + 1
			data, _ := json.Marshal(l.rec)
			if l.rev, err = state.kv.Update(ctx, key, data, l.rev); err != nil {
				return nil, nil, fmt.Errorf("%w: lease of %s taken by another delivery", ErrFenced, session)
			}
			s.stored(key, Entry{Value: data, Revision: l.rev})
			raced, err = l.mark(ctx)
		}
		if err != nil {
			return nil, nil, err
		}
		l.fenceHeaders()
		if fresh && !raced {
			// Nobody could write to the session since it was read: no
			// lease, no marker, and each marker went in over none (a
			// holder that appeared meanwhile would have moved one). The
			// session as read is complete.
			l.logSeq.Store(s.Log.LastStreamSeq)
			return l, s, nil
		}
		// Read after the markers: everything an earlier holder stored is
		// in it, and nothing it writes from now on is.
		view, err := b.ReadSession(ctx, session)
		if err != nil {
			return nil, nil, err
		}
		l.view = view
		l.logSeq.Store(view.Log.LastStreamSeq)
		return l, view, nil
	}
}

// markersKept reports whether the released holder's fence markers are
// still stored as it left them, and will be for a while: each is the last
// record of its fence subject, with the sequence the release recorded, and
// younger than half its stream's max age. Markers age out with their
// stream's records (TURN_CHUNKS and TURN_RAW keep an hour by default); a
// take that kept a marker gone would have every record of its kind refused.
func (b *Bus) markersKept(s *Session, prev LeaseRecord) bool {
	for _, kind := range FencedKinds {
		m, ok := s.markers[kind]
		if !ok || m.seq != prev.Fences[kind] {
			return false
		}
		if age := b.fenceMaxAge[kind]; age > 0 && time.Since(m.at) > age/2 {
			return false
		}
	}
	return true
}

// once wraps admit so that it runs at most once (nil admits).
func once(admit func() error) func() error {
	if admit == nil {
		return func() error { return nil }
	}
	var (
		done bool
		err  error
	)
	return func() error {
		if !done {
			done, err = true, admit()
		}
		return err
	}
}

// maxLogReads bounds the reads of a session log that is behind its lease's
// release (the read raced the releasing turn's last appends, or a replica
// answered that has not stored them yet).
const maxLogReads = 4

// complete returns s, or s read again, once its log reaches stream sequence
// logSeq.
func (b *Bus) complete(ctx context.Context, s *Session, logSeq uint64) (*Session, error) {
	for range maxLogReads {
		if s.Log.LastStreamSeq >= logSeq {
			return s, nil
		}
		var err error
		if s, err = b.ReadSession(ctx, s.Name); err != nil {
			return nil, err
		}
	}
	if s.Log.LastStreamSeq >= logSeq {
		return s, nil
	}
	return nil, fmt.Errorf("bus: session log of %s: read up to sequence %d, the lease was released at %d", s.Name, s.Log.LastStreamSeq, logSeq)
}

// leaseOf is the lease of s as read, as readLease returns it.
func leaseOf(s *Session) (rec LeaseRecord, rev uint64, known bool) {
	e, ok := s.Entry(LeaseKey(s.Name))
	if !ok {
		return LeaseRecord{}, 0, false
	}
	if json.Unmarshal(e.Value, &rec) != nil {
		return LeaseRecord{}, e.Revision, false
	}
	return rec, e.Revision, true
}

// readLease reads a session's lease record and revision (0 when there is
// none). known is false when there is no readable record: its epochs were
// lost.
func readLease(ctx context.Context, state *State, key string) (rec LeaseRecord, rev uint64, known bool, err error) {
	e, err := state.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return LeaseRecord{}, 0, false, nil
	}
	if err != nil {
		return LeaseRecord{}, 0, false, err
	}
	if json.Unmarshal(e.Value(), &rec) != nil {
		return LeaseRecord{}, e.Revision(), false, nil
	}
	return rec, e.Revision(), true, nil
}

// laterEpoch is mark's refusal: a marker of a later (or equal) epoch is
// stored.
type laterEpoch struct {
	session      string
	epoch, yours uint64
}

func (e *laterEpoch) Error() string {
	return fmt.Sprintf("session %s: a later take (epoch %d) fenced this one (epoch %d)", e.session, e.epoch, e.yours)
}

func (e *laterEpoch) Unwrap() error { return ErrFenced }

// mark writes the holder's fence marker in every fenced stream, each only
// over a marker of an earlier epoch. raced reports that some marker was
// not where the lease record said (another holder's, or moved meanwhile).
func (l *Lease) mark(ctx context.Context) (raced bool, err error) {
	body, _ := json.Marshal(fenceMarker{Epoch: l.rec.Epoch, Turn: l.rec.Turn})
	expect := map[string]uint64{}
	for _, kind := range FencedKinds {
		expect[kind] = l.rec.Fences[kind]
	}
	todo := FencedKinds
	for race := 0; len(todo) > 0; race++ {
		if race >= maxMarkerRaces {
			return true, fmt.Errorf("bus: lease of %s: fence markers keep moving", l.session)
		}
		futures := make([]jetstream.PubAckFuture, len(todo))
		for i, kind := range todo {
			m := &nats.Msg{Subject: l.subj[kind], Data: body, Header: nats.Header{
				jetstream.MsgRollup:                     {jetstream.MsgRollupSubject},
				jetstream.ExpectedLastSubjSeqHeader:     {strconv.FormatUint(expect[kind], 10)},
				jetstream.ExpectedLastSubjSeqSubjHeader: {l.subj[kind]},
			}}
			f, err := l.js.PublishMsgAsync(m, stall)
			if err != nil {
				return raced, fmt.Errorf("bus: fence marker %s: %w", m.Subject, err)
			}
			futures[i] = f
		}
		var again []string
		for i, f := range futures {
			kind := todo[i]
			select {
			case ack := <-f.Ok():
				l.fences[kind] = ack.Sequence
			case err := <-f.Err():
				if !isWrongLastSequence(err) {
					return raced, fmt.Errorf("bus: fence marker %s: %w", l.subj[kind], err)
				}
				// Another take wrote a marker: overwrite it only if it is
				// of an earlier epoch.
				raced = true
				seq, epoch, err := l.lastMarker(ctx, kind)
				if err != nil {
					return raced, err
				}
				if epoch >= l.rec.Epoch {
					return raced, &laterEpoch{session: l.session, epoch: epoch, yours: l.rec.Epoch}
				}
				expect[kind] = seq
				again = append(again, kind)
			case <-ctx.Done():
				return raced, ctx.Err()
			}
		}
		todo = again
	}
	return raced, nil
}

// lastMarker reads the stored marker of kind: its sequence and epoch (0, 0
// when there is none).
func (l *Lease) lastMarker(ctx context.Context, kind string) (seq, epoch uint64, err error) {
	m, err := l.bus.lastOn(ctx, kind, l.subj[kind])
	if err != nil {
		return 0, 0, fmt.Errorf("bus: fence marker %s: %w", l.subj[kind], err)
	}
	if m == nil {
		return 0, 0, nil
	}
	var fm fenceMarker
	_ = json.Unmarshal(m.Data, &fm) // an unreadable marker counts as epoch 0
	return m.Sequence, fm.Epoch, nil
}

// Epoch is the lease's epoch.
func (l *Lease) Epoch() uint64 { return l.rec.Epoch }

// Deliveries is how many deliveries of the request have taken the lease,
// this one included.
func (l *Lease) Deliveries() int { return l.rec.Deliveries }

// Session is the leased session.
func (l *Lease) Session() string { return l.session }

// Held reports whether the lease is still this holder's: its key still has
// the revision the take gave it.
func (l *Lease) Held(ctx context.Context) (bool, error) {
	ctx, cancel := op(ctx)
	defer cancel()
	e, err := l.state.kv.Get(ctx, LeaseKey(l.session))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("bus: lease of %s: %w", l.session, err)
	}
	return e.Revision() == l.rev, nil
}

// Release ends the holding: the lease records that its turn ended, the
// markers the next take keeps, and the stream sequence of the session log's
// last message. It fails with ErrFenced if the lease was lost. After
// Release nothing may be written under the lease.
func (l *Lease) Release(ctx context.Context) error {
	rec := l.rec
	rec.Fences = l.fences
	rec.Released, rec.LogSeq = true, l.logSeq.Load()
	data, _ := json.Marshal(rec)
	ctx, cancel := writeOp(ctx)
	defer cancel()
	rev, err := l.state.kv.Update(ctx, LeaseKey(l.session), data, l.rev)
	if err != nil {
		if isWrongLastSequence(err) {
			return fmt.Errorf("%w: lease of %s lost before its release", ErrFenced, l.session)
		}
		return fmt.Errorf("bus: release lease of %s: %w", l.session, err)
	}
	l.view.stored(LeaseKey(l.session), Entry{Value: data, Revision: rev})
	return nil
}

// fence sets the headers that make a record of kind refused once the lease
// is lost.
// The header values are built once per holding (fenceHeaders): a chunk is
// published per provider frame.
func (l *Lease) fence(kind string, h nats.Header) {
	v := l.headers[kind]
	h[jetstream.ExpectedLastSubjSeqHeader] = v.seq
	h[jetstream.ExpectedLastSubjSeqSubjHeader] = v.subject
}

// fenceHeader holds the values of a kind's fence headers, shared (read
// only) by every record of the holding.
type fenceHeader struct{ seq, subject []string }

// fenceHeaders builds the fence header values once the markers are written.
func (l *Lease) fenceHeaders() {
	l.headers = make(map[string]fenceHeader, len(FencedKinds))
	for _, kind := range FencedKinds {
		l.headers[kind] = fenceHeader{seq: []string{strconv.FormatUint(l.fences[kind], 10)}, subject: []string{l.subj[kind]}}
	}
}

// State is the worker-only state as this holder may write it: every put is
// refused once the lease is lost.
func (l *Lease) State() *FencedState { return &FencedState{l: l} }

// FencedState writes TURN_STATE under a lease.
type FencedState struct {
	l    *Lease
	pipe pipeline // PutAsync's writes
}

// Get reads key (reads are not fenced). A key of the session is read from
// the session as the holder read it, with its own writes since: nobody
// else writes them while it holds the lease.
func (f *FencedState) Get(ctx context.Context, key string) ([]byte, bool, error) {
	if strings.HasPrefix(key, f.l.session+".") {
		e, ok := f.l.view.Entry(key)
		return e.Value, ok, nil
	}
	return f.l.state.Get(ctx, key)
}

// Put stores value under key if the lease is still held; otherwise it fails
// with ErrFenced. A value the server cannot take fails with
// wire.ErrRecordTooLarge.
func (f *FencedState) Put(ctx context.Context, key string, value []byte) error {
	ctx, cancel := writeOp(ctx)
	defer cancel()
	ack, err := f.l.js.PublishMsg(ctx, f.msg(key, value))
	if err != nil {
		if isWrongLastSequence(err) {
			return fmt.Errorf("%w: state %s: the lease of %s was lost", ErrFenced, key, f.l.session)
		}
		return fmt.Errorf("bus: state %s: %w", key, sized(err))
	}
	f.stored(key, bytes.Clone(value), ack.Sequence)
	return nil
}

// Turn opens the writer of the leased turn, positioned after the session
// log's last message (the log of the session Take returned). Every record
// it writes is fenced by the lease.
func (l *Lease) Turn(codec wire.Codec, log *Log) *TurnWriter {
	w := l.bus.Turn(l.session, l.rec.Turn, codec, log)
	w.lease = l
	w.serial = map[string]*serialSlot{}
	for kind, replicated := range l.bus.replicated {
		if replicated {
			w.serial[kind] = &serialSlot{}
		}
	}
	return w
}

// WatchLeases calls wake with the session of every lease update (a take or
// a release) until ctx ends or the watch fails. Nothing is read but the
// keys.
func (s *State) WatchLeases(ctx context.Context, wake func(session string)) error {
	w, err := s.kv.WatchFiltered(ctx, []string{LeaseKey("*")}, jetstream.UpdatesOnly(), jetstream.MetaOnly())
	if err != nil {
		return fmt.Errorf("bus: watch leases: %w", err)
	}
	defer w.Stop() //nolint:errcheck // stopping a watch that ends
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("bus: lease watch ended")
			}
			if e != nil {
				wake(strings.TrimSuffix(e.Key(), ".=lease"))
			}
		}
	}
}

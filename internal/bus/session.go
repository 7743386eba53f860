package bus

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/pkg/wire"
)

// A Session is a session as a worker reads it before running one of its
// turns: its log, its TURN_STATE entries and its oldest pending request,
// read together (ReadSession).
type Session struct {
	// Name is the session id.
	Name string
	// Log is the session log as read.
	Log *Log
	// Head is the submit-stream sequence of the session's oldest pending
	// request, 0 if none.
	Head uint64
	// markers are the session's fence markers as read: the sequence and
	// store time of the last record on each fence subject (zero if none).
	markers map[string]storedMarker
	entry   *sessionEntry
	cache   *sessionCache
}

// storedMarker is a fence marker as stored.
type storedMarker struct {
	seq uint64
	at  time.Time
}

// Entry returns the session's TURN_STATE entry under key (a key of the
// session: it starts with the session id and a dot), as of the read, or
// of a later read or write of this worker.
func (s *Session) Entry(key string) (Entry, bool) {
	return s.entry.get(key)
}

// stored records a write of this worker, so reads of the key need no round
// trip.
func (s *Session) stored(key string, e Entry) {
	s.cache.grew(s.entry, s.entry.put(key, e))
}

// ReadSession reads a session: its log, its TURN_STATE entries and the
// head of its pending requests, each with one request (more for what does
// not fit one batch), all three at once. A session this worker read before
// is kept in memory (sessionCache), and only what was stored since is read:
// the cost of the read does not grow with the session's length.
func (b *Bus) ReadSession(ctx context.Context, session string) (*Session, error) {
	e := b.cache.entry(session)
	logAfter, stateAfter := e.positions()
	var (
		wg                 sync.WaitGroup
		logRecs, stateRecs []*jetstream.RawStreamMsg
		logErr, stateErr   error
		head               uint64
		headErr            error
		markers            = make(map[string]storedMarker, len(FencedKinds))
		markersMu          sync.Mutex
		markerErr          error
	)
	wg.Add(3 + len(FencedKinds))
	for _, kind := range FencedKinds {
		go func() {
			defer wg.Done()
			m, err := b.lastOn(ctx, kind, FenceSubject(b.subjects, kind, session))
			markersMu.Lock()
			defer markersMu.Unlock()
			if err != nil {
				markerErr = err
				return
			}
			if m != nil {
				markers[kind] = storedMarker{seq: m.Sequence, at: m.Time}
			}
		}()
	}
	go func() {
		defer wg.Done()
		logRecs, logErr = b.readAfter(ctx, wire.StreamMessages, b.subjects.Message(session), logAfter)
	}()
	go func() {
		defer wg.Done()
		stateRecs, stateErr = b.readAfter(ctx, "KV_"+StateBucket, stateSubject(session+".>"), stateAfter)
	}()
	go func() {
		defer wg.Done()
		head, headErr = b.FirstPending(ctx, session)
	}()
	wg.Wait()
	switch {
	case logErr != nil:
		return nil, fmt.Errorf("bus: session log of %s: %w", session, logErr)
	case stateErr != nil:
		return nil, fmt.Errorf("bus: state of %s: %w", session, stateErr)
	case headErr != nil:
		return nil, headErr
	case markerErr != nil:
		return nil, fmt.Errorf("bus: fence markers of %s: %w", session, markerErr)
	}
	log, grown := e.apply(logRecs, stateRecs)
	b.cache.grew(e, grown)
	return &Session{Name: session, Log: log, Head: head, markers: markers, entry: e, cache: b.cache}, nil
}

// lastOn is the last record of kind's stream on subject, nil if none.
func (b *Bus) lastOn(ctx context.Context, kind, subject string) (*jetstream.RawStreamMsg, error) {
	ctx, cancel := op(ctx)
	defer cancel()
	m, err := b.fences[kind].GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	return m, err
}

// readAfter reads every record of stream on filter stored after sequence
// after, batch by batch.
func (b *Bus) readAfter(ctx context.Context, stream, filter string, after uint64) ([]*jetstream.RawStreamMsg, error) {
	var out []*jetstream.RawStreamMsg
	for {
		rctx, cancel := op(ctx)
		caughtUp, err := b.dg.Batch(rctx, stream, filter, after, func(m *jetstream.RawStreamMsg) bool {
			if m.Sequence <= after {
				return false
			}
			out, after = append(out, m), m.Sequence
			return true
		})
		cancel()
		if err != nil {
			return nil, err
		}
		if caughtUp {
			return out, nil
		}
	}
}

// sessionEntry is what a worker keeps of one session: the log and the
// TURN_STATE entries as read, and the sequences they were read up to.
type sessionEntry struct {
	session string
	elem    *list.Element // in sessionCache.lru, under sessionCache.mu

	mu sync.Mutex
	// msgs, stored: the log. Snapshots share the arrays with a capacity
	// cut at their length, so appends here never touch what they see.
	msgs     []wire.Message
	stored   []time.Time
	requests []uint64
	logSeq   uint64 // stream sequence of the last log record read
	skipped  int
	state    map[string]Entry
	stateSeq uint64 // stream sequence of the last state record read
	bytes    int    // what it holds, roughly: its records' sizes
}

// positions are the sequences the entry was read up to.
func (e *sessionEntry) positions() (logSeq, stateSeq uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.logSeq, e.stateSeq
}

// kvOperation is the header of a KV delete or purge marker.
const kvOperation = "KV-Operation"

// apply adds records read after the entry's positions (two reads of the
// same session may run at once: a record is applied once) and returns the
// log as it is now and how many bytes the entry grew by.
func (e *sessionEntry) apply(logRecs, stateRecs []*jetstream.RawStreamMsg) (*Log, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	before := e.bytes
	for _, r := range logRecs {
		if r.Sequence <= e.logSeq {
			continue
		}
		e.logSeq = r.Sequence
		var m wire.Message
		if err := wire.Decode(r.Header.Get(wire.HeaderContentType), r.Data, &m); err != nil {
			e.skipped++
			continue
		}
		e.msgs = append(e.msgs, m)
		e.stored = append(e.stored, r.Time)
		req, _ := strconv.ParseUint(r.Header.Get(wire.HeaderRequest), 10, 64) // 0: none
		e.requests = append(e.requests, req)
		e.bytes += len(r.Data)
	}
	prefix := stateSubject("")
	for _, r := range stateRecs {
		if r.Sequence <= e.stateSeq {
			continue
		}
		e.stateSeq = r.Sequence
		key := strings.TrimPrefix(r.Subject, prefix)
		if op := r.Header.Get(kvOperation); op == "DEL" || op == "PURGE" {
			e.drop(key, r.Sequence)
			continue
		}
		e.set(key, Entry{Value: r.Data, Revision: r.Sequence})
	}
	n := len(e.msgs)
	return &Log{Messages: e.msgs[:n:n], Stored: e.stored[:n:n], Requests: e.requests[:n:n], LastStreamSeq: e.logSeq, Skipped: e.skipped}, e.bytes - before
}

// set keeps v under key unless the entry has a later revision, and
// returns how many bytes the entry grew by; the caller holds e.mu.
func (e *sessionEntry) set(key string, v Entry) int {
	old, ok := e.state[key]
	if ok && old.Revision >= v.Revision {
		return 0
	}
	n := len(v.Value) - len(old.Value)
	e.bytes += n
	e.state[key] = v
	return n
}

// drop forgets key, deleted at revision rev; the caller holds e.mu.
func (e *sessionEntry) drop(key string, rev uint64) {
	if old, ok := e.state[key]; ok && old.Revision < rev {
		e.bytes -= len(old.Value)
		delete(e.state, key)
	}
}

func (e *sessionEntry) get(key string) (Entry, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, ok := e.state[key]
	return v, ok
}

func (e *sessionEntry) put(key string, v Entry) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.set(key, v)
}

// sessionCache keeps the sessions a worker read most recently, within a
// bound on what they hold; the least recently read go first.
//
// What an entry holds is exactly what the stores hold, as long as records
// are only added (a key's new revision replaces its old one, a delete is a
// marker the reads see): a read after the entry's positions brings it up to
// date. A record that vanishes without a trace would not be noticed, so
// nothing is cached when the session log or the state bucket has a max
// age (records expire) — every read then reads the whole session — and an
// operator who purges a session's log while workers run must restart them.
type sessionCache struct {
	maxBytes int // 0: keep nothing between reads

	mu    sync.Mutex
	byID  map[string]*sessionEntry
	lru   *list.List // front: read most recently
	bytes int
}

// DefaultSessionCacheBytes bounds what a worker keeps of the sessions it
// read: past it, the sessions read least recently are forgotten (and read
// whole again when their next turn comes).
const DefaultSessionCacheBytes = 64 << 20

func newSessionCache(maxBytes int) *sessionCache {
	return &sessionCache{maxBytes: maxBytes, byID: map[string]*sessionEntry{}, lru: list.New()}
}

// entry returns the session's entry, a new one if it has none (or keeps
// nothing).
func (c *sessionCache) entry(session string) *sessionEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byID[session]; ok {
		c.lru.MoveToFront(e.elem)
		return e
	}
	e := &sessionEntry{session: session, state: map[string]Entry{}}
	if c.maxBytes > 0 {
		e.elem = c.lru.PushFront(e)
		c.byID[session] = e
	}
	return e
}

// grew accounts for n more bytes held by e and forgets the least recently
// read sessions while the cache holds more than its bound (never e).
func (c *sessionCache) grew(e *sessionEntry, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.elem == nil {
		return
	}
	c.bytes += n
	for c.bytes > c.maxBytes {
		last := c.lru.Back()
		old := last.Value.(*sessionEntry)
		if old == e {
			return
		}
		c.forget(old)
	}
}

// forget drops e; the caller holds c.mu.
func (c *sessionCache) forget(e *sessionEntry) {
	if e.elem == nil {
		return
	}
	c.lru.Remove(e.elem)
	delete(c.byID, e.session)
	e.mu.Lock()
	c.bytes -= e.bytes
	e.mu.Unlock()
	e.elem = nil
}

// invalidate forgets a session whose entry may not be the stores' view (a
// compare-and-set on it failed): its next read reads it whole.
func (c *sessionCache) invalidate(session string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byID[session]; ok {
		c.forget(e)
	}
}

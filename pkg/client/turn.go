package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/pkg/wire"
)

const (
	// inactiveThreshold lets the server delete a follower's consumer after
	// the client went away without closing it; an ordered consumer the
	// server deleted while the client was merely slow is recreated where
	// it stopped.
	inactiveThreshold = 30 * time.Second
	// bufferedUpdates bounds the records read ahead of Next.
	bufferedUpdates = 256
)

// The three record kinds a Turn follows, one ordered consumer each.
const (
	kindChunk = iota
	kindMessage
	kindEvent
	numKinds
)

var kindNames = [numKinds]string{"chunks", "messages", "events"}

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

// Turn follows one turn's chunks, messages and events. Updates of the three
// streams are merged in arrival order; within each stream they keep stream
// order. The terminal event (turn.completed, turn.failed or turn.rejected)
// is always the last update, delivered once every chunk and message of the
// turn stored before it has been; then Next returns io.EOF.
//
// Next and Wait must not be called concurrently; Close may be called from
// any goroutine.
type Turn struct {
	session, turn string
	chunks        jetstream.Stream
	messages      jetstream.Stream
	chunkSubject  string
	msgSubject    string

	items   chan item
	done    chan struct{}
	stop    sync.Once
	wg      sync.WaitGroup
	iters   []jetstream.MessagesContext
	conss   []jetstream.Consumer
	js      jetstream.JetStream
	skipped atomic.Int64

	// State of Next, owned by its caller.
	pos      [numKinds]uint64 // stream sequence of the last record received, per kind
	terminal *Update          // held back until chunks and messages caught up
	targets  *[numKinds]uint64
	err      error // sticky follower failure
	eof      bool
}

// item is what a follower hands to Next: a record's position, with its
// update unless the record belongs to another turn or could not be decoded.
type item struct {
	kind int
	seq  uint64
	keep bool
	upd  Update
	err  error
}

func (c *Client) follow(ctx context.Context, st streamSet, session, turn string, msgFrom, eventFrom uint64) (*Turn, error) {
	t := &Turn{
		js:           c.js,
		session:      session,
		turn:         turn,
		chunks:       st.chunks,
		messages:     st.messages,
		chunkSubject: c.subjects.Chunk(session, turn),
		msgSubject:   c.subjects.Message(session),
		items:        make(chan item, bufferedUpdates),
		done:         make(chan struct{}),
	}
	// The session log before msgFrom holds nothing of this turn: count it
	// as read, or a terminal lookup finding an earlier message would wait
	// for a record this follower never receives.
	t.pos[kindMessage] = msgFrom - 1
	for _, f := range []struct {
		kind    int
		stream  jetstream.Stream
		subject string
		from    uint64
	}{
		{kindChunk, st.chunks, t.chunkSubject, 1},
		{kindMessage, st.messages, t.msgSubject, msgFrom},
		{kindEvent, st.events, c.subjects.Event(session), eventFrom},
	} {
		cons, err := f.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
			FilterSubjects:    []string{f.subject},
			DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
			OptStartSeq:       f.from,
			InactiveThreshold: inactiveThreshold,
		})
		if err != nil {
			t.Close()
			return nil, fmt.Errorf("client: follow %s of %s/%s: %w", kindNames[f.kind], session, turn, err)
		}
		it, err := cons.Messages()
		if err != nil {
			t.Close()
			return nil, fmt.Errorf("client: follow %s of %s/%s: %w", kindNames[f.kind], session, turn, err)
		}
		t.iters = append(t.iters, it)
		t.conss = append(t.conss, cons)
		t.wg.Add(1)
		go t.read(f.kind, it)
	}
	return t, nil
}

// Session is the turn's session id.
func (t *Turn) Session() string { return t.session }

// ID is the turn id (the one Submit generated, if the request had none).
func (t *Turn) ID() string { return t.turn }

// Skipped counts the records that could not be decoded and were skipped.
// Their turn is unknown, so it counts those of every turn of the session.
func (t *Turn) Skipped() int { return int(t.skipped.Load()) }

// Next returns the turn's next update, blocking until one arrives, ctx is
// done (ctx.Err(); the turn stays usable) or the turn is closed (ErrClosed).
// After the terminal event it returns io.EOF, and keeps doing so. A failure
// of a follower (a closed connection) is returned, and returned again by
// later calls.
func (t *Turn) Next(ctx context.Context) (Update, error) {
	for {
		switch {
		case t.eof:
			return Update{}, io.EOF
		case t.err != nil:
			return Update{}, t.err
		}
		if err := ctx.Err(); err != nil {
			return Update{}, err
		}
		select {
		case <-t.done:
			return Update{}, ErrClosed
		default:
		}
		if t.terminal != nil {
			if t.targets == nil {
				targets, err := t.lookupTargets(ctx)
				if err != nil {
					return Update{}, err
				}
				t.targets = targets
			}
			if t.caughtUp() {
				u := *t.terminal
				t.terminal = nil
				t.eof = true
				t.Close()
				return u, nil
			}
		}
		select {
		case it := <-t.items:
			if it.err != nil {
				t.err = it.err
				return Update{}, it.err
			}
			t.pos[it.kind] = it.seq
			switch {
			case !it.keep:
				continue
			case it.kind == kindEvent && t.terminal != nil:
				continue // nothing of the turn follows its terminal event
			case it.kind == kindEvent && it.upd.Event.Terminal():
				t.terminal = &it.upd
				continue
			}
			return it.upd, nil
		case <-t.done:
			return Update{}, ErrClosed
		case <-ctx.Done():
			return Update{}, ctx.Err()
		}
	}
}

// lookupTargets finds the last stored chunk of the turn and the last stored
// message of the session. Workers store every chunk and message of a turn
// before its terminal event, so once the followers have passed these
// sequences nothing of the turn is left to deliver.
func (t *Turn) lookupTargets(ctx context.Context) (*[numKinds]uint64, error) {
	var targets [numKinds]uint64
	var err error
	if targets[kindChunk], err = lastSeq(ctx, t.chunks, t.chunkSubject); err != nil {
		return nil, err
	}
	if targets[kindMessage], err = lastSeq(ctx, t.messages, t.msgSubject); err != nil {
		return nil, err
	}
	return &targets, nil
}

func (t *Turn) caughtUp() bool {
	return t.pos[kindChunk] >= t.targets[kindChunk] && t.pos[kindMessage] >= t.targets[kindMessage]
}

func lastSeq(ctx context.Context, s jetstream.Stream, subject string) (uint64, error) {
	m, err := s.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, fmt.Errorf("client: last record of %s: %w", subject, err)
	}
	return m.Sequence, nil
}

// Close stops the followers and waits for them. It is idempotent, and safe
// after Next returned io.EOF (which stops them already).
func (t *Turn) Close() {
	t.stop.Do(func() {
		close(t.done)
		for _, it := range t.iters {
			it.Stop()
		}
		t.wg.Wait()
		t.deleteConsumers()
	})
}

// deleteConsumers removes the followers' ephemeral consumers from the
// server at once instead of leaving them for the inactivity threshold: a
// busy client would otherwise hit the server's consumer limits.
func (t *Turn) deleteConsumers() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, c := range t.conss {
		info := c.CachedInfo()
		if info == nil {
			continue
		}
		// Best effort: the server expires it anyway.
		_ = t.js.DeleteConsumer(ctx, info.Stream, info.Name)
	}
}

// read runs one follower until Close, handing every record to Next.
func (t *Turn) read(kind int, it jetstream.MessagesContext) {
	defer t.wg.Done()
	for {
		m, err := it.Next()
		if err != nil {
			select {
			case <-t.done:
			case t.items <- item{kind: kind, err: fmt.Errorf("client: follow %s of %s/%s: %w", kindNames[kind], t.session, t.turn, err)}:
			}
			return
		}
		select {
		case t.items <- t.decode(kind, m):
		case <-t.done:
			return
		}
	}
}

func (t *Turn) decode(kind int, m jetstream.Msg) item {
	it := item{kind: kind}
	if meta, err := m.Metadata(); err == nil {
		it.seq = meta.Sequence.Stream
	}
	it.upd.StreamSeq = it.seq
	var err error
	switch kind {
	case kindChunk:
		c := new(wire.Chunk)
		// The subject names the turn: every chunk on it is the turn's.
		err = wire.Decode(m.Headers().Get(wire.HeaderContentType), m.Data(), c)
		it.upd.Chunk, it.keep = c, true
	case kindMessage:
		msg := new(wire.Message)
		err = wire.Decode(m.Headers().Get(wire.HeaderContentType), m.Data(), msg)
		it.upd.Message, it.keep = msg, msg.TurnID == t.turn
	case kindEvent:
		ev := new(wire.SessionEvent)
		err = wire.Decode(m.Headers().Get(wire.HeaderContentType), m.Data(), ev)
		it.upd.Event, it.keep = ev, ev.TurnID == t.turn
	}
	if err != nil {
		t.skipped.Add(1)
		return item{kind: kind, seq: it.seq}
	}
	return it
}

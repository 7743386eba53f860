package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/turnstream/turnstream/internal/directget"
	"github.com/turnstream/turnstream/internal/tracing"
	"github.com/turnstream/turnstream/pkg/wire"
)

// cancelFlushTimeout bounds Cancel's wait for a worker's answer, and the
// flush of a new Turn's subscriptions, when ctx has no deadline.
const cancelFlushTimeout = 10 * time.Second

// Client submits, follows and cancels turns. It is safe for concurrent use.
type Client struct {
	nc       *nats.Conn
	js       jetstream.JetStream
	dg       *directget.Getter
	subjects wire.Subjects
	codec    wire.Codec
}

// New returns a client using nc. It does no network I/O; the streams must
// exist (workers create them at start).
func New(nc *nats.Conn, opts ...Option) (*Client, error) {
	o := options{prefix: wire.DefaultPrefix, codec: wire.JSON}
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("%w: nil option", ErrInvalidOption)
		}
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if nc == nil {
		return nil, fmt.Errorf("client: %w", nats.ErrInvalidConnection)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("client: jetstream: %w", err)
	}
	return &Client{nc: nc, js: js, dg: directget.New(js), subjects: wire.Subjects{Prefix: o.prefix}, codec: o.codec}, nil
}

// Submit publishes req on its session's submit subject and returns a Turn
// that follows it from its first record.
//
// req.SessionID must be a subject token. An empty req.TurnID is filled with
// a fresh one (Turn.ID reports it); a given one must be a subject token.
// Invalid ids are reported as a *wire.ValidationError; everything else about
// the request is validated by the worker, which rejects it with a
// turn.rejected event.
//
// The Turn subscribes to the turn's live subjects before the request is
// published, and starts reading the session's messages and events where the
// streams ended before it, so no record of the turn can be missed.
//
// The request is published with Nats-Msg-Id "<session>/<turn>" (JetStream
// deduplicates across the whole stream, and turn ids are only unique within
// a session), so a retried Submit of the same turn is stored once. Such a duplicate follows
// the turn from the start of the session, as Follow does, since its records
// may already have been written.
func (c *Client) Submit(ctx context.Context, req wire.TurnRequest) (*Turn, error) {
	if !wire.ValidToken(req.SessionID) {
		return nil, invalidToken(wire.ReasonInvalidSessionID, "session_id")
	}
	if req.TurnID == "" {
		req.TurnID = nuid.Next()
	} else if !wire.ValidToken(req.TurnID) {
		return nil, invalidToken(wire.ReasonInvalidTurnID, "turn_id")
	}
	data, err := c.codec.Marshal(&req)
	if err != nil {
		return nil, fmt.Errorf("client: encode request: %w", err)
	}
	// Capture where this turn's messages and events can start before
	// publishing, so none of them can be missed.
	from, err := c.sessionEnds(ctx, req.SessionID)
	if err != nil {
		return nil, err
	}
	t, err := c.follow(ctx, req.SessionID, req.TurnID, from)
	if err != nil {
		return nil, err
	}

	m := &nats.Msg{
		Subject: c.subjects.Submit(req.SessionID),
		Data:    data,
		Header:  nats.Header{wire.HeaderContentType: {c.codec.ContentType()}},
	}
	// The caller's span, if any, is the parent of the turn's.
	tracing.Inject(ctx, m.Header)
	ack, err := c.js.PublishMsg(ctx, m, jetstream.WithMsgID(MsgID(req.SessionID, req.TurnID)))
	if err != nil {
		t.Close()
		return nil, fmt.Errorf("client: submit %s/%s: %w", req.SessionID, req.TurnID, err)
	}
	if ack.Duplicate {
		// Nothing was read yet: start over from the session's start.
		t.rewind(Position{})
	}
	return t, nil
}

// Follow attaches to a running or finished turn, as a UI resuming after a
// reconnect does: it delivers the turn's chunks from the first one still
// stored, and its messages and events read from the start of the session
// (so the cost grows with the session). It is Resume from the zero
// Position. If the turn's terminal event is no longer stored (TURN_EVENTS
// has a max age), Next blocks until its ctx ends or the Turn is closed.
func (c *Client) Follow(ctx context.Context, session, turn string) (*Turn, error) {
	return c.Resume(ctx, session, turn, Position{})
}

// Resume attaches to a turn after the records a follower already took: the
// Turn delivers only records stored after the Position's sequences (a UI
// keeps Turn.Position, or the StreamSeq of the last update of each kind it
// showed, across a reconnect). Resume from a Position taken before the
// turn's terminal event; a Turn that has delivered it is done.
func (c *Client) Resume(ctx context.Context, session, turn string, after Position) (*Turn, error) {
	if !wire.ValidToken(session) {
		return nil, invalidToken(wire.ReasonInvalidSessionID, "session_id")
	}
	if !wire.ValidToken(turn) {
		return nil, invalidToken(wire.ReasonInvalidTurnID, "turn_id")
	}
	// The lookup only reports a missing topology clearly: a Turn reads
	// the streams by name.
	if _, err := c.streams(ctx); err != nil {
		return nil, err
	}
	return c.follow(ctx, session, turn, after)
}

// Cancel asks the workers to stop turn of session: a core NATS request
// of wire.Cancel on the session's cancel subject. A cancel of a named turn
// is durable: the worker running the turn stops it, and one that is not
// running yet (queued behind the session's earlier turn, between
// deliveries, not yet picked up) ends turn.failed "cancelled" when a
// worker picks it up, without calling its provider. An empty turn cancels
// whichever turns of the session are running, and nothing else.
//
// Cancel returns once a worker answered that it stored the cancel (for an
// empty turn: that it got it), within ctx's deadline or 10s. It fails
// wrapping ErrNoWorkers when no worker listens (the cancel is lost), and
// ErrCancelNotStored when the worker could not store it. It does not wait
// for the turn to end: follow it for the terminal event.
func (c *Client) Cancel(ctx context.Context, session, turn string) error {
	if !wire.ValidToken(session) {
		return invalidToken(wire.ReasonInvalidSessionID, "session_id")
	}
	if turn != "" && !wire.ValidToken(turn) {
		return invalidToken(wire.ReasonInvalidTurnID, "turn_id")
	}
	data, err := c.codec.Marshal(&wire.Cancel{TurnID: turn})
	if err != nil {
		return fmt.Errorf("client: encode cancel: %w", err)
	}
	m := &nats.Msg{
		Subject: c.subjects.Cancel(session),
		Data:    data,
		Header:  nats.Header{wire.HeaderContentType: {c.codec.ContentType()}},
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cancelFlushTimeout)
		defer cancel()
	}
	answer, err := c.nc.RequestMsgWithContext(ctx, m)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return fmt.Errorf("client: cancel %s: %w", session, ErrNoWorkers)
	case err != nil:
		return fmt.Errorf("client: cancel %s: %w", session, err)
	case answer.Header.Get(wire.HeaderCancelError) != "":
		return fmt.Errorf("client: cancel %s: %w", session, ErrCancelNotStored)
	}
	return nil
}

// streamSet holds the streams a Turn reads, looked up so that a missing
// topology is reported at once (and for Submit's starting sequences).
type streamSet struct {
	chunks, messages, events jetstream.Stream
}

// sessionEnds is where a session's messages and events end: the sequence
// of the last stored record of each (0 for none), read with one direct get
// of each at once. A record of a turn submitted after it comes after it.
func (c *Client) sessionEnds(ctx context.Context, session string) (Position, error) {
	var (
		p      Position
		evErr  error
		wg     sync.WaitGroup
		msgErr error
	)
	wg.Go(func() { p.Events, evErr = c.dg.Last(ctx, wire.StreamEvents, c.subjects.Event(session)) })
	p.Messages, msgErr = c.dg.Last(ctx, wire.StreamMessages, c.subjects.Message(session))
	wg.Wait()
	for _, e := range []struct {
		stream string
		err    error
	}{{wire.StreamMessages, msgErr}, {wire.StreamEvents, evErr}} {
		switch {
		case errors.Is(e.err, nats.ErrNoResponders):
			return Position{}, fmt.Errorf("client: stream %s (no worker has created the topology yet?): %w", e.stream, jetstream.ErrStreamNotFound)
		case e.err != nil:
			return Position{}, fmt.Errorf("client: stream %s: %w", e.stream, e.err)
		}
	}
	return p, nil
}

func (c *Client) streams(ctx context.Context) (streamSet, error) {
	var st streamSet
	for _, s := range []struct {
		name string
		dst  *jetstream.Stream
	}{
		{wire.StreamChunks, &st.chunks},
		{wire.StreamMessages, &st.messages},
		{wire.StreamEvents, &st.events},
	} {
		h, err := c.js.Stream(ctx, s.name)
		if err != nil {
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				return streamSet{}, fmt.Errorf("client: stream %s (no worker has created the topology yet?): %w", s.name, err)
			}
			return streamSet{}, fmt.Errorf("client: stream %s: %w", s.name, err)
		}
		*s.dst = h
	}
	return st, nil
}

func invalidToken(reason, field string) error {
	return &wire.ValidationError{Reason: reason, Field: field, Detail: "must be 1-128 characters of [A-Za-z0-9_-]"}
}

// MsgID is the Nats-Msg-Id a turn request is submitted with.
func MsgID(session, turn string) string { return session + "/" + turn }

package bus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/pkg/wire"
)

// TurnWriter publishes one turn's records in the turn's encoding (raw
// frames excepted: their body is the provider's bytes). Chunks, raw frames
// and events are published asynchronously; Flush waits for their acks
// once. Messages are appended synchronously behind an expected-sequence
// fence. A TurnWriter is safe for concurrent use.
type TurnWriter struct {
	js       jetstream.JetStream
	codec    wire.Codec
	session  string
	turn     string
	chunkSub string
	rawSub   string
	eventSub string
	msgSub   string
	subjects wire.Subjects
	// tools ensures a tool's consumer before its first call is dispatched.
	tools *toolConsumers

	// lease fences every record; nil for the unleased writes of a
	// rejection.
	lease *Lease

	// serial holds, per fenced kind whose stream is replicated, the
	// fenced publish still in flight: a clustered stream refuses a second
	// message whose expected-sequence check names the same subject while
	// the first is not yet committed, so there fenced records of one kind
	// go one at a time (a standalone server takes them pipelined).
	serial map[string]*serialSlot

	mu      sync.Mutex
	pending []jetstream.PubAckFuture
	failed  error  // a serial publish's refusal, for Flush
	logSeq  uint64 // stream sequence of the session's last message; 0 for none
	logLen  uint64 // messages in the session log

	pipe pipeline // AppendAsync's appends
}

// Turn opens a writer for one turn, positioned after the session log's last
// message (a session read: ReadSession, LoadLog).
func (b *Bus) Turn(session, turn string, codec wire.Codec, log *Log) *TurnWriter {
	w := &TurnWriter{
		js: b.js, codec: codec, session: session, turn: turn, subjects: b.subjects, tools: b.tools,
		chunkSub: b.subjects.Chunk(session, turn),
		rawSub:   b.subjects.Raw(session, turn),
		eventSub: b.subjects.Event(session),
		msgSub:   b.subjects.Message(session),
	}
	if log != nil {
		// Positions count undecodable records too: they hold positions.
		w.logSeq, w.logLen = log.LastStreamSeq, uint64(len(log.Messages)+log.Skipped)
	}
	return w
}

// Codec is the turn's encoding.
func (w *TurnWriter) Codec() wire.Codec { return w.codec }

// Chunk publishes a chunk asynchronously.
func (w *TurnWriter) Chunk(c *wire.Chunk) error {
	data, err := w.codec.Marshal(c)
	if err != nil {
		return fmt.Errorf("bus: encode chunk: %w", err)
	}
	m := &nats.Msg{Subject: w.chunkSub, Data: data, Header: nats.Header{
		wire.HeaderContentType: {w.codec.ContentType()},
		wire.HeaderStep:        {strconv.Itoa(c.Step)},
		wire.HeaderAttempt:     {strconv.Itoa(c.Attempt)},
		wire.HeaderSeq:         {strconv.Itoa(c.Seq)},
	}}
	if w.lease != nil {
		w.lease.fence("chunk", m.Header)
	}
	return w.fencedAsync("chunk", m)
}

// Raw publishes a provider frame, byte for byte, to the turn's TURN_RAW
// subject asynchronously, fenced by the lease as chunks are; Flush waits
// for its ack. The frame must be of the writer's turn. A frame too large
// for the server fails with wire.ErrRecordTooLarge. f.Bytes is copied (a
// provider may reuse its buffer once the frame is relayed, and an
// asynchronous publish keeps its message until it is acknowledged).
func (w *TurnWriter) Raw(f *wire.RawFrame) error {
	if f.SessionID != w.session || f.TurnID != w.turn {
		return fmt.Errorf("bus: raw frame of session %s turn %s given to the writer of session %s turn %s", f.SessionID, f.TurnID, w.session, w.turn)
	}
	h, err := f.Header()
	if err != nil {
		return fmt.Errorf("bus: raw frame: %w", err)
	}
	m := &nats.Msg{Subject: w.rawSub, Data: bytes.Clone(f.Bytes), Header: h}
	if w.lease != nil {
		w.lease.fence("raw", m.Header)
	}
	return w.fencedAsync("raw", m)
}

// Event publishes an audit event asynchronously.
func (w *TurnWriter) Event(ev *wire.SessionEvent) error {
	m, err := encode(w.codec, w.eventSub, ev)
	if err != nil {
		return err
	}
	if w.lease != nil {
		w.lease.fence("event", m.Header)
	}
	return w.fencedAsync("event", m)
}

// serialSlot is the one fenced publish of a kind in flight.
type serialSlot struct {
	mu   sync.Mutex
	last jetstream.PubAckFuture
	// err is the refusal that stopped the kind: sticky, so nothing of the
	// kind is published after a record the server refused.
	err error
}

// settle waits for the slot's publish, if any; the caller holds s.mu.
func (s *serialSlot) settle(ctx context.Context) error {
	if s.err != nil || s.last == nil {
		return s.err
	}
	f := s.last
	select {
	case <-f.Ok():
	case err := <-f.Err():
		s.last = nil
		s.err = fmt.Errorf("bus: publish %s: %w", f.Msg().Subject, fenced(err))
		return s.err
	case <-ctx.Done():
		return ctx.Err() // the future stays: a later settle waits again
	}
	s.last = nil
	return nil
}

// fencedAsync publishes a record of kind asynchronously; when the kind's
// stream is replicated and the record is fenced, it first waits for the
// kind's previous fenced publish to be acknowledged (a refusal stops the
// writer there).
func (w *TurnWriter) fencedAsync(kind string, m *nats.Msg) error {
	slot, ok := w.serial[kind]
	if w.lease == nil || !ok {
		return w.async(m)
	}
	slot.mu.Lock()
	defer slot.mu.Unlock()
	if err := slot.settle(context.Background()); err != nil {
		return err
	}
	f, err := w.js.PublishMsgAsync(m, stall)
	if err != nil {
		err = fmt.Errorf("bus: publish %s: %w", m.Subject, sized(err))
		w.fail(err)
		return err
	}
	slot.last = f
	return nil
}

// fail keeps the first failure of a publish that no Flush will see.
func (w *TurnWriter) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed == nil {
		w.failed = err
	}
}

// StallWait is how long an asynchronous publish waits for room when the
// connection's window of unacknowledged publishes is full
// (jetstream.WithPublishAsyncMaxPending): as long as an ack may take
// (the workers' publish-ack timeout), so a full window slows the turns
// down instead of failing their records (nats.go's default gives up after
// 200 ms, and a turn then loses its markers and is run again).
const StallWait = 30 * time.Second

// stall makes a publish wait StallWait for room in the window.
var stall = jetstream.WithStallWait(StallWait)

func (w *TurnWriter) async(m *nats.Msg) error {
	f, err := w.js.PublishMsgAsync(m, stall)
	if err != nil {
		// Also kept for the next Flush: a caller that only logs it (an
		// event, a marker) must not go on as if the record were stored.
		err = fmt.Errorf("bus: publish %s: %w", m.Subject, sized(err))
		w.fail(err)
		return err
	}
	w.mu.Lock()
	w.pending = append(w.pending, f)
	w.mu.Unlock()
	return nil
}

// headerRoom is kept free of a record's payload for its headers.
const headerRoom = 4 << 10

// MaxRecordBytes is the largest encoded record body the server accepts.
func (w *TurnWriter) MaxRecordBytes() int {
	return int(w.js.Conn().MaxPayload()) - headerRoom
}

// Flush waits for the acks of every chunk, raw frame and event published
// so far and returns the first failure.
func (w *TurnWriter) Flush(ctx context.Context) error {
	w.mu.Lock()
	pending := w.pending
	w.pending = nil
	first := w.failed
	w.failed = nil
	w.mu.Unlock()
	for _, f := range pending {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			if first == nil {
				first = fmt.Errorf("bus: publish %s: %w", f.Msg().Subject, fenced(err))
			}
		case <-ctx.Done():
			if first != nil {
				w.fail(first) // not lost: the next Flush reports it
			}
			return ctx.Err()
		}
	}
	for _, slot := range w.serial {
		slot.mu.Lock()
		err := slot.settle(ctx)
		slot.mu.Unlock()
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Append writes a finalized message to the session log. It sets m.Seq to
// the message's position in the log. The write is fenced: if any other
// writer appended to the session since this writer's last append, it fails
// with ErrFenced and writes nothing. A retried append of the same position
// is deduplicated by its message ID.
func (w *TurnWriter) Append(ctx context.Context, m *wire.Message) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	m.Seq = w.logLen + 1
	msg, err := encode(w.codec, w.msgSub, m)
	if err != nil {
		return err
	}
	opts := []jetstream.PublishOpt{jetstream.WithMsgID(appendID(w.session, m.Seq))}
	if w.lease != nil {
		// Only the lease holder writes the log: its marker fences it.
		w.lease.fence("message", msg.Header)
	} else {
		opts = append(opts, jetstream.WithExpectLastSequenceForSubject(w.logSeq, w.msgSub))
	}
	ack, err := w.js.PublishMsg(ctx, msg, opts...)
	if err != nil {
		if isWrongLastSequence(err) {
			return fmt.Errorf("%w: session %s at position %d", ErrFenced, w.session, m.Seq)
		}
		return fmt.Errorf("bus: append to session log: %w", sized(err))
	}
	if ack.Duplicate {
		// The position was already written (a replicated stream checks
		// message ids before the expected sequence): by another writer, or
		// by this one before a lost reply. Either way this writer's view is
		// stale; it stops, and a redelivery resumes from the log.
		return fmt.Errorf("%w: session %s position %d already written", ErrFenced, w.session, m.Seq)
	}
	w.logSeq, w.logLen = max(w.logSeq, ack.Sequence), m.Seq
	if w.lease != nil {
		w.lease.appended(w.logSeq)
	}
	return nil
}

// Dispatch publishes a tool call to its tool's work queue once: a repeated
// dispatch of the same call is deduplicated by its message ID.
//
// Before the tool's first call it creates the tool's durable consumer
// (Topology.Open describes it): workers create the tool consumers, tool
// workers only bind to them. A consumer that cannot be created does not
// stop the call: it is published all the same, with a warning, since a
// consumer that exists serves it, one made later (the next dispatch of the
// tool tries again) finds it in the work queue, and a call nobody answers
// gets its synthesized error result at its deadline.
func (w *TurnWriter) Dispatch(ctx context.Context, call *wire.ToolCall) error {
	if err := w.tools.ensure(ctx, call.Name); err != nil && ctx.Err() == nil {
		w.tools.log.Warn().Err(err).Str("tool", call.Name).Str("session_id", call.SessionID).Str("turn_id", call.TurnID).
			Str("call_id", call.CallID).Msg("tool consumer not created; dispatching the call all the same")
	}
	msg, err := encode(w.codec, w.subjects.Tool(call.Name), call)
	if err != nil {
		return err
	}
	_, err = w.js.PublishMsg(ctx, msg, jetstream.WithMsgID("tool:"+call.SessionID+":"+call.TurnID+":"+call.CallID))
	if err != nil {
		if errors.Is(err, jetstream.ErrNoStreamResponse) {
			return fmt.Errorf("bus: dispatch %s: no stream for tool subject: %w", call.Name, err)
		}
		return fmt.Errorf("bus: dispatch %s: %w", call.Name, sized(err))
	}
	return nil
}

// Terminal flushes pending chunks, raw frames and events, then publishes
// the turn's terminal event synchronously, so it is stored after
// everything else.
func (w *TurnWriter) Terminal(ctx context.Context, ev *wire.SessionEvent) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	m, err := encode(w.codec, w.eventSub, ev)
	if err != nil {
		return err
	}
	if w.lease != nil {
		w.lease.fence("event", m.Header)
	}
	if _, err := w.js.PublishMsg(ctx, m, jetstream.WithMsgID("end:"+w.session+":"+w.turn)); err != nil {
		return fmt.Errorf("bus: terminal event: %w", fenced(err))
	}
	return nil
}

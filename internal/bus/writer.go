package bus

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/tracing"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TurnWriter publishes one turn's records in the turn's encoding (raw
// frames excepted: their body is the provider's bytes). Chunks, raw frames
// and events are published without waiting for their acks, which the
// connection's ack tracker counts (acks.go); Flush waits for them once.
// Messages are appended synchronously behind an expected-sequence fence.
// A TurnWriter is safe for concurrent use.
//
// A record that failed (refused by the server, its ack lost or overdue,
// not sent at all) fails every later Flush and Terminal of the writer:
// the turn's records have a hole, so the delivery must not end the turn;
// it is interrupted and a redelivery resumes it with a new writer. Only a
// record the client refused for its size is reported by the next Flush
// alone: its caller handles it (the attempt fails, the turn is aborted).
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

	// serial holds, per fenced kind whose stream is replicated, the slot
	// its publishes take one at a time: a clustered stream refuses a
	// second message whose expected-sequence check names the same subject
	// while the first is not yet committed, so there a fenced record of
	// one kind waits until the kind has nothing awaiting its ack (a
	// standalone server takes them pipelined).
	serial map[string]*serialSlot

	// acks is the bus's ack tracker.
	acks *ackTracker
	// group counts this writer's publishes awaiting their ack and keeps
	// their first failure (guarded by acks.mu).
	group ackGroup

	mu sync.Mutex
	// refused is a record the client refused for its size, for the next
	// Flush.
	refused error
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
	w.acks = b.acks
	if log != nil {
		// Positions count undecodable records too: they hold positions.
		w.logSeq, w.logLen = log.LastStreamSeq, uint64(len(log.Messages)+log.Skipped)
	}
	return w
}

// Codec is the turn's encoding.
func (w *TurnWriter) Codec() wire.Codec { return w.codec }

// Chunk publishes a chunk; Flush waits for its ack.
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
	return w.fencedAsync(kindChunk, m)
}

// Raw publishes a provider frame, byte for byte, to the turn's TURN_RAW
// subject, fenced by the lease as chunks are; Flush waits for its ack.
// The frame must be of the writer's turn. A frame too large for the
// server fails with wire.ErrRecordTooLarge. f.Bytes is not kept: the
// connection copies the message into its write buffer before Raw returns
// and never sends it again, so a provider may reuse its buffer at once.
func (w *TurnWriter) Raw(f *wire.RawFrame) error {
	if f.SessionID != w.session || f.TurnID != w.turn {
		return fmt.Errorf("bus: raw frame of session %s turn %s given to the writer of session %s turn %s", f.SessionID, f.TurnID, w.session, w.turn)
	}
	h, err := f.Header()
	if err != nil {
		return fmt.Errorf("bus: raw frame: %w", err)
	}
	m := &nats.Msg{Subject: w.rawSub, Data: f.Bytes, Header: h}
	if w.lease != nil {
		w.lease.fence("raw", m.Header)
	}
	return w.fencedAsync(kindRaw, m)
}

// Event publishes an audit event; Flush waits for its ack.
func (w *TurnWriter) Event(ev *wire.SessionEvent) error {
	m, err := encode(w.codec, w.eventSub, ev)
	if err != nil {
		return err
	}
	if w.lease != nil {
		w.lease.fence("event", m.Header)
	}
	return w.fencedAsync(kindEvent, m)
}

// serialSlot is taken by the fenced publishes of a kind that go one at a
// time (TurnWriter.serial).
type serialSlot struct {
	mu sync.Mutex
}

// fencedAsync publishes a record of kind; when the kind's stream is
// replicated and the record is fenced, it first waits until the kind has
// nothing awaiting its ack (bounded by the ack timeout), and publishes
// nothing after a failure.
func (w *TurnWriter) fencedAsync(kind ackKind, m *nats.Msg) error {
	slot := w.serial[kindNames[kind]]
	if w.lease == nil || slot == nil || w.acks == nil {
		return w.async(kind, m)
	}
	slot.mu.Lock()
	defer slot.mu.Unlock()
	if err := w.acks.idle(context.Background(), &w.group, kind); err != nil {
		return err
	}
	return w.async(kind, m)
}

// async publishes m, counted until its ack. A publish that cannot be sent
// is also kept for the next Flush: a caller that only logs it (an event,
// a marker) must not go on as if the record were stored.
func (w *TurnWriter) async(kind ackKind, m *nats.Msg) error {
	// No ctx reaches a record's publish: a full window waits at most
	// StallWait, or until the connection closes.
	if err := w.acks.publish(context.Background(), &w.group, kind, m); err != nil {
		err = fmt.Errorf("bus: publish %s: %w", m.Subject, sized(err))
		w.fail(err)
		return err
	}
	return nil
}

// fail keeps the failure of a publish that was not sent: a record too
// large for the next Flush, anything else for every later one.
func (w *TurnWriter) fail(err error) {
	if errors.Is(err, wire.ErrRecordTooLarge) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.refused == nil {
			w.refused = err
		}
		return
	}
	w.acks.fail(&w.group, err)
}

// StallWait is how long a publish waits for room when the connection's
// window of unacknowledged publishes is full (AckOptions.Window; for the
// lease's fence markers, jetstream.WithPublishAsyncMaxPending): as long
// as an ack may take (the default ack timeout), so a full window slows
// the turns down instead of failing their records (nats.go's default
// gives up after 200 ms, and a turn then loses its markers and is run
// again).
const StallWait = 30 * time.Second

// stall makes a fence marker's asynchronous publish wait StallWait for
// room in nats.go's window.
var stall = jetstream.WithStallWait(StallWait)

// headerRoom is kept free of a record's payload for its headers.
const headerRoom = 4 << 10

// MaxRecordBytes is the largest encoded record body the server accepts.
func (w *TurnWriter) MaxRecordBytes() int {
	return int(w.js.Conn().MaxPayload()) - headerRoom
}

// Flush waits for the acks of every chunk, raw frame and event published
// so far and returns the first failure. When ctx ends first it returns
// ctx's error (or a failure already known), and nothing is forgotten: the
// next Flush waits for the same acks.
func (w *TurnWriter) Flush(ctx context.Context) error {
	if err := w.acks.idle(ctx, &w.group, allKinds); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.refused
	w.refused = nil
	return err
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
		w.lease.tag(msg.Header)
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
	// The call's span (the turn loop's) is the tool worker's parent.
	tracing.Inject(ctx, msg.Header)
	_, err = w.js.PublishMsg(ctx, msg, jetstream.WithMsgID("tool:"+call.SessionID+":"+call.TurnID+":"+call.CallID))
	if err != nil {
		if errors.Is(err, jetstream.ErrNoStreamResponse) {
			return fmt.Errorf("bus: dispatch %s: no stream for tool subject: %w", call.Name, err)
		}
		return fmt.Errorf("bus: dispatch %s: %w", call.Name, sized(err))
	}
	return nil
}

// EventOnce publishes one event synchronously, outside any lease, with the
// message id id: a second publish with the same id within the stream's
// duplicate window stores nothing (a redelivered request reports once).
func (w *TurnWriter) EventOnce(ctx context.Context, ev *wire.SessionEvent, id string) error {
	m, err := encode(w.codec, w.eventSub, ev)
	if err != nil {
		return err
	}
	if _, err := w.js.PublishMsg(ctx, m, jetstream.WithMsgID(id)); err != nil {
		return fmt.Errorf("bus: event %s: %w", ev.Type, err)
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

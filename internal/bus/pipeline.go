package bus

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/pkg/wire"
)

// Pipelined writes. A turn's bookkeeping writes that need not wait for one
// another (the turn's record, its input messages and its first request
// facts; its end, its continuation envelope and its terminal event) are
// published together and their acks awaited once: a round trip for all of
// them instead of one each. Each is fenced exactly as its synchronous form.
//
// On a replicated stream the server refuses a fenced write while an earlier
// one naming the same fence subject is not yet committed (see
// TurnWriter.serial), so there the pipelined forms wait for each write as
// the synchronous ones do.

// pendingWrite is a pipelined write whose ack is still to be read.
type pendingWrite struct {
	f    jetstream.PubAckFuture
	what string
	// acked handles the ack; it may refuse it.
	acked func(*jetstream.PubAck) error
}

// pipeline holds a writer's pending writes and the first failure of one
// that could not be published.
type pipeline struct {
	mu      sync.Mutex
	pending []pendingWrite
	failed  error
}

func (p *pipeline) add(w pendingWrite) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending = append(p.pending, w)
}

func (p *pipeline) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failed == nil {
		p.failed = err
	}
}

// wait reads the ack of every pending write and returns the first failure;
// a context that ends first leaves the writes unread for the next wait.
func (p *pipeline) wait(ctx context.Context) error {
	p.mu.Lock()
	pending, first := p.pending, p.failed
	p.pending, p.failed = nil, nil
	p.mu.Unlock()
	for i, w := range pending {
		var err error
		select {
		case ack := <-w.f.Ok():
			if w.acked != nil {
				err = w.acked(ack)
			}
		case perr := <-w.f.Err():
			err = fmt.Errorf("bus: %s: %w", w.what, sized(fenced(perr)))
		case <-ctx.Done():
			p.mu.Lock()
			p.pending = append(pending[i:], p.pending...)
			if first != nil && p.failed == nil {
				p.failed = first
			}
			p.mu.Unlock()
			return ctx.Err()
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}

// PutAsync stores value under key as Put does, fenced by the lease,
// without waiting for the ack: Sync waits for it and reports its failure.
func (f *FencedState) PutAsync(ctx context.Context, key string, value []byte) {
	if f.l.bus.stateReplicated {
		if err := f.Put(ctx, key, value); err != nil {
			f.pipe.fail(err)
		}
		return
	}
	m := f.msg(key, value)
	fut, err := f.l.js.PublishMsgAsync(m, stall)
	if err != nil {
		f.pipe.fail(fmt.Errorf("bus: state %s: %w", key, sized(err)))
		return
	}
	f.pipe.add(pendingWrite{f: fut, what: "state " + key, acked: func(ack *jetstream.PubAck) error {
		f.stored(key, value, ack.Sequence)
		return nil
	}})
}

// Sync waits for the state writes PutAsync published and returns the first
// failure (wrapping ErrFenced if the lease was lost).
func (f *FencedState) Sync(ctx context.Context) error { return f.pipe.wait(ctx) }

// AppendAsync appends m to the session log as Append does, without waiting
// for the ack: Sync waits for it. m.Seq is its position, taken at once, so
// appends that follow come after it.
func (w *TurnWriter) AppendAsync(ctx context.Context, m *wire.Message) error {
	if w.lease == nil || w.lease.bus.messagesReplicated {
		return w.Append(ctx, m)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	m.Seq = w.logLen + 1
	msg, err := encode(w.codec, w.msgSub, m)
	if err != nil {
		return err
	}
	w.lease.fence("message", msg.Header)
	w.lease.tag(msg.Header)
	pos := m.Seq
	fut, err := w.js.PublishMsgAsync(msg, jetstream.WithMsgID(appendID(w.session, pos)), stall)
	if err != nil {
		return fmt.Errorf("bus: append to session log: %w", sized(err))
	}
	w.logLen = pos
	w.pipe.add(pendingWrite{f: fut, what: "append to session log", acked: func(ack *jetstream.PubAck) error {
		if ack.Duplicate {
			return fmt.Errorf("%w: session %s position %d already written", ErrFenced, w.session, pos)
		}
		w.appended(ack.Sequence)
		return nil
	}})
	return nil
}

// Sync waits for the appends AppendAsync published and returns the first
// failure.
func (w *TurnWriter) Sync(ctx context.Context) error { return w.pipe.wait(ctx) }

// appended records the stream sequence of an appended message: the fence of
// an unleased writer's next append, and what the lease's release records.
func (w *TurnWriter) appended(seq uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.logSeq = max(w.logSeq, seq)
	if w.lease != nil {
		w.lease.appended(w.logSeq)
	}
}

// appendID is the message id of position pos of a session log: a retried
// append of the same position is deduplicated.
func appendID(session string, pos uint64) string {
	return "msg:" + session + ":" + strconv.FormatUint(pos, 10)
}

// msg is the fenced TURN_STATE write of value under key.
func (f *FencedState) msg(key string, value []byte) *nats.Msg {
	return &nats.Msg{Subject: stateSubject(key), Data: value, Header: nats.Header{
		jetstream.ExpectedLastSubjSeqHeader:     {strconv.FormatUint(f.l.rev, 10)},
		jetstream.ExpectedLastSubjSeqSubjHeader: {stateSubject(LeaseKey(f.l.session))},
	}}
}

// stored records a write of a key of the session in the holder's view.
func (f *FencedState) stored(key string, value []byte, rev uint64) {
	if strings.HasPrefix(key, f.l.session+".") {
		f.l.view.stored(key, Entry{Value: value, Revision: rev})
	}
}

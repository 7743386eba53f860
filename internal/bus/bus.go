package bus

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/directget"
	"github.com/turnstream/turnstream/pkg/wire"
)

// Bus is a worker's handle on the topology: it opens per-turn writers and
// reads session logs and tool results.
type Bus struct {
	js       jetstream.JetStream
	dg       *directget.Getter // the session reads
	subjects wire.Subjects
	messages jetstream.Stream
	results  jetstream.Stream
	submit   jetstream.Stream
	chunks   jetstream.Stream
	// replicated tells, per fenced kind, whether its stream has more
	// than one replica (TurnWriter.fencedAsync).
	replicated map[string]bool
	// tools ensures each tool's consumer before its calls are dispatched.
	tools *toolConsumers
	// cache keeps the sessions read most recently (ReadSession).
	cache *sessionCache
	// fences are the fenced streams by kind, with each one's max age (0:
	// none), for their markers (Take).
	fences      map[string]jetstream.Stream
	fenceMaxAge map[string]time.Duration
	// acks counts the acks of the writers' asynchronous publishes.
	acks *ackTracker
	// stateReplicated and messagesReplicated: TURN_STATE or TURN_MESSAGES
	// has more than one replica (pipelined writes wait for each ack there).
	stateReplicated, messagesReplicated bool
}

// Open binds to the streams of the ensured topology t. The bus creates the
// durable consumer of each tool before it dispatches the tool's first call
// (TurnWriter.Dispatch), as t describes it (ToolConsumerConfig); log gets
// a warning when it cannot.
func (t Topology) Open(ctx context.Context, js jetstream.JetStream, log zerolog.Logger) (*Bus, error) {
	b, err := New(ctx, js, t.Subjects)
	if err != nil {
		return nil, err
	}
	b.tools = newToolConsumers(js, t, log)
	return b, nil
}

// New binds to the streams of an ensured topology that uses subjects; its
// tool consumers take the topology's defaults (Topology.Open sets them).
func New(ctx context.Context, js jetstream.JetStream, subjects wire.Subjects) (*Bus, error) {
	messages, err := js.Stream(ctx, wire.StreamMessages)
	if err != nil {
		return nil, fmt.Errorf("bus: stream %s: %w", wire.StreamMessages, err)
	}
	results, err := js.Stream(ctx, wire.StreamResults)
	if err != nil {
		return nil, fmt.Errorf("bus: stream %s: %w", wire.StreamResults, err)
	}
	submit, err := js.Stream(ctx, wire.StreamSubmit)
	if err != nil {
		return nil, fmt.Errorf("bus: stream %s: %w", wire.StreamSubmit, err)
	}
	chunks, err := js.Stream(ctx, wire.StreamChunks)
	if err != nil {
		return nil, fmt.Errorf("bus: stream %s: %w", wire.StreamChunks, err)
	}
	raw, err := js.Stream(ctx, wire.StreamRaw)
	if err != nil {
		return nil, fmt.Errorf("bus: stream %s: %w", wire.StreamRaw, err)
	}
	events, err := js.Stream(ctx, wire.StreamEvents)
	if err != nil {
		return nil, fmt.Errorf("bus: stream %s: %w", wire.StreamEvents, err)
	}
	state, err := js.Stream(ctx, "KV_"+StateBucket)
	if err != nil {
		return nil, fmt.Errorf("bus: bucket %s: %w", StateBucket, err)
	}
	cacheBytes := DefaultSessionCacheBytes
	if messages.CachedInfo().Config.MaxAge > 0 || state.CachedInfo().Config.MaxAge > 0 {
		cacheBytes = 0 // records expire unseen: see sessionCache
	}
	acks, err := startTracker(js.Conn(), AckOptions{}.withDefaults())
	if err != nil {
		return nil, err
	}
	replicated := map[string]bool{
		"chunk": chunks.CachedInfo().Config.Replicas > 1,
		"raw":   raw.CachedInfo().Config.Replicas > 1,
		"event": events.CachedInfo().Config.Replicas > 1,
	}
	b := &Bus{
		js: js, dg: directget.New(js), subjects: subjects, messages: messages, results: results, submit: submit, chunks: chunks, replicated: replicated,
		tools: newToolConsumers(js, Topology{Subjects: subjects}, zerolog.Nop()),
		cache: newSessionCache(cacheBytes), acks: acks,
		stateReplicated: state.CachedInfo().Config.Replicas > 1, messagesReplicated: messages.CachedInfo().Config.Replicas > 1,
		fences:      map[string]jetstream.Stream{"message": messages, "chunk": chunks, "raw": raw, "event": events},
		fenceMaxAge: map[string]time.Duration{},
	}
	for kind, s := range b.fences {
		b.fenceMaxAge[kind] = s.CachedInfo().Config.MaxAge
	}
	return b, nil
}

// Subjects returns the subject names the bus uses.
func (b *Bus) Subjects() wire.Subjects { return b.subjects }

// DeadLetter copies a rejected request, body and headers unchanged but for
// the Nats- headers JetStream would act on, to the dead-letter subject of
// its session, with the reject reason in a header, and the field the
// rejection names (a wire.ValidationError's Field: printable ASCII, at most
// 128 bytes), if any, in another.
// An invalid session token goes to the "_invalid" session.
func (b *Bus) DeadLetter(ctx context.Context, session string, m *nats.Msg, reason, field string) error {
	if !wire.ValidToken(session) {
		session = "_invalid"
	}
	out := &nats.Msg{Subject: b.subjects.Dead(session), Data: m.Data, Header: nats.Header{}}
	for k, v := range m.Header {
		if strings.HasPrefix(k, "Nats-") {
			// JetStream reads these on a publish: the original's message
			// id would collide with its dedupe window, and a client's
			// expected-sequence, rollup or TTL header would make the copy
			// refused or act on TURN_DEAD.
			continue
		}
		out.Header[k] = v
	}
	out.Header.Set(wire.HeaderRejectReason, reason)
	if field != "" && printableASCII(field) {
		out.Header.Set(wire.HeaderRejectField, field)
	}
	// A request that filled the max payload cannot be copied whole with
	// the added headers: keep its first bytes and say how large it was,
	// rather than lose the copy.
	if room := int(b.js.Conn().MaxPayload()) - headerBytes(out.Header) - 64; len(out.Data) > room {
		out.Header.Set(wire.HeaderDeadTruncated, strconv.Itoa(len(out.Data)))
		out.Data = out.Data[:max(0, room)]
	}
	if _, err := b.js.PublishMsg(ctx, out); err != nil {
		return fmt.Errorf("bus: dead letter: %w", err)
	}
	return nil
}

// printableASCII reports whether s holds only printable ASCII, as a header
// value may.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// headerBytes is the size of h as NATS writes it.
func headerBytes(h nats.Header) int {
	n := len("NATS/1.0\r\n\r\n")
	for k, vs := range h {
		for _, v := range vs {
			n += len(k) + len(": ") + len(v) + len("\r\n")
		}
	}
	return n
}

func encode(codec wire.Codec, subject string, v any) (*nats.Msg, error) {
	data, err := codec.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("bus: encode for %s: %w", subject, err)
	}
	m := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
	m.Header.Set(wire.HeaderContentType, codec.ContentType())
	return m, nil
}

// FirstPending returns the stream sequence of the oldest request still in
// the submit work queue for session, 0 if none. Because acked requests
// leave a work queue, a turn whose request is not the first pending one of
// its session must wait: turns of a session never overlap and start in
// submission order.
func (b *Bus) FirstPending(ctx context.Context, session string) (uint64, error) {
	ctx, cancel := op(ctx)
	defer cancel()
	m, err := b.submit.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(b.subjects.Submit(session)))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("bus: first pending request: %w", err)
	}
	return m.Sequence, nil
}

package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/wire"
)

// testTimeout only keeps a broken test from hanging; nothing asserts on time.
const testTimeout = 30 * time.Second

type env struct {
	srv *natstest.Server
	nc  *nats.Conn
	js  jetstream.JetStream
	bus *bus.Bus
}

// start runs an embedded JetStream server with the turnstream topology.
func start(t *testing.T) *env {
	t.Helper()
	srv := natstest.Start(t)
	nc, js := srv.JetStream()
	ctx := testContext(t)
	if err := (bus.Topology{}).Ensure(ctx, js); err != nil {
		t.Fatalf("Ensure() = %v; want nil", err)
	}
	b, err := bus.New(ctx, js, wire.Subjects{})
	if err != nil {
		t.Fatalf("bus.New() = %v; want nil", err)
	}
	return &env{srv: srv, nc: nc, js: js, bus: b}
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func newClient(t *testing.T, e *env, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(e.nc, opts...)
	if err != nil {
		t.Fatalf("New() = %v; want nil", err)
	}
	return c
}

// closeTurn closes tr when the test ends, before its connection closes.
func closeTurn(t *testing.T, tr *client.Turn) {
	t.Helper()
	t.Cleanup(tr.Close)
}

// pullRequest takes the next submitted request off the worker consumer, as
// a worker does, and returns it with the codec of its Content-Type.
func pullRequest(ctx context.Context, t *testing.T, e *env) (wire.TurnRequest, wire.Codec) {
	t.Helper()
	cons, err := e.js.Consumer(ctx, wire.StreamSubmit, bus.WorkerConsumer)
	if err != nil {
		t.Fatalf("Consumer(%s) = %v; want nil", bus.WorkerConsumer, err)
	}
	m, err := cons.Next(jetstream.FetchContext(ctx))
	if err != nil {
		t.Fatalf("worker Next() = %v; want nil", err)
	}
	codec, err := wire.CodecFor(m.Headers().Get(wire.HeaderContentType))
	if err != nil {
		t.Fatalf("CodecFor(%q) = %v; want nil", m.Headers().Get(wire.HeaderContentType), err)
	}
	var req wire.TurnRequest
	if err := wire.Decode(m.Headers().Get(wire.HeaderContentType), m.Data(), &req); err != nil {
		t.Fatalf("Decode(request) = %v; want nil", err)
	}
	if err := m.Ack(); err != nil {
		t.Fatalf("Ack() = %v; want nil", err)
	}
	return req, codec
}

// worker writes one turn's records with the bus's TurnWriter, as the real
// worker does.
type worker struct {
	t       *testing.T
	ctx     context.Context
	bus     *bus.Bus
	session string
	turn    string
	codec   wire.Codec
	w       *bus.TurnWriter
	seq     int
}

func newWorker(ctx context.Context, t *testing.T, e *env, session, turn string, codec wire.Codec) *worker {
	return &worker{t: t, ctx: ctx, bus: e.bus, session: session, turn: turn, codec: codec,
		w: e.bus.Turn(session, turn, codec, nil)}
}

func (w *worker) chunks(texts ...string) {
	w.t.Helper()
	for _, text := range texts {
		w.seq++
		f := &wire.RawFrame{SessionID: w.session, TurnID: w.turn, Step: 1, Attempt: 1, Seq: w.seq,
			Bytes: []byte(`{"choices":[{"delta":{"content":` + strconv.Quote(text) + `}}]}`)}
		if err := w.w.Raw(f); err != nil {
			w.t.Fatalf("Raw(%q) = %v; want nil", text, err)
		}
		c := &wire.Chunk{SessionID: w.session, TurnID: w.turn, Step: 1, Attempt: 1, Seq: w.seq, Delta: &wire.Delta{Text: text}}
		if err := w.w.Chunk(c); err != nil {
			w.t.Fatalf("Chunk(%q) = %v; want nil", text, err)
		}
	}
	if err := w.w.Flush(w.ctx); err != nil {
		w.t.Fatalf("Flush() = %v; want nil", err)
	}
}

// message appends to the session log through a writer positioned at the
// log's current end, so turns of one session can interleave in tests.
func (w *worker) message(role wire.Role, content string) {
	w.t.Helper()
	log, err := w.bus.LoadLog(w.ctx, w.session)
	if err != nil {
		w.t.Fatalf("LoadLog(%s) = %v; want nil", w.session, err)
	}
	m := &wire.Message{SessionID: w.session, TurnID: w.turn, Step: 1, Role: role, Content: content, Time: time.Now().UTC()}
	if err := w.bus.Turn(w.session, w.turn, w.codec, log).Append(w.ctx, m); err != nil {
		w.t.Fatalf("Append(%s %q) = %v; want nil", role, content, err)
	}
}

// append appends to the session log through the worker's own writer, as a
// worker that wrote every message of the session since it began does: it
// reads nothing, so it creates no consumer.
func (w *worker) append(role wire.Role, content string) {
	w.t.Helper()
	m := &wire.Message{SessionID: w.session, TurnID: w.turn, Step: 1, Role: role, Content: content, Time: time.Now().UTC()}
	if err := w.w.Append(w.ctx, m); err != nil {
		w.t.Fatalf("Append(%s %q) = %v; want nil", role, content, err)
	}
}

func (w *worker) event(typ string) {
	w.t.Helper()
	if err := w.w.Event(w.newEvent(typ)); err != nil {
		w.t.Fatalf("Event(%s) = %v; want nil", typ, err)
	}
	if err := w.w.Flush(w.ctx); err != nil {
		w.t.Fatalf("Flush() = %v; want nil", err)
	}
}

func (w *worker) terminal(typ string) {
	w.t.Helper()
	if err := w.w.Terminal(w.ctx, w.newEvent(typ)); err != nil {
		w.t.Fatalf("Terminal(%s) = %v; want nil", typ, err)
	}
}

func (w *worker) newEvent(typ string) *wire.SessionEvent {
	return &wire.SessionEvent{Type: typ, SessionID: w.session, TurnID: w.turn, Step: 1, Time: time.Now().UTC()}
}

// trace is the readable form of a followed turn, one string per update.
type trace struct {
	chunks   []string // delta text
	messages []string // "role:content"
	events   []string // type
	all      []string // every update, labelled, in delivery order
	seqs     [3][]uint64
}

// collect calls Next until io.EOF.
func collect(ctx context.Context, t *testing.T, tr *client.Turn) trace {
	t.Helper()
	var got trace
	for {
		u, err := tr.Next(ctx)
		if errors.Is(err, io.EOF) {
			return got
		}
		if err != nil {
			t.Fatalf("Next() = %v after %q; want an update or io.EOF", err, got.all)
		}
		l := label(u)
		kind, text, _ := strings.Cut(l, ":")
		switch kind {
		case "chunk":
			got.chunks = append(got.chunks, text)
			got.seqs[0] = append(got.seqs[0], u.StreamSeq)
		case "message":
			got.messages = append(got.messages, text)
			got.seqs[1] = append(got.seqs[1], u.StreamSeq)
		case "event":
			got.events = append(got.events, text)
			got.seqs[2] = append(got.seqs[2], u.StreamSeq)
		default:
			t.Fatalf("Next() = %+v; want exactly one record set", u)
		}
		got.all = append(got.all, l)
		if turn := turnOf(u); turn != tr.ID() {
			t.Errorf("Next() = %s of turn %q; want turn %q", l, turn, tr.ID())
		}
	}
}

// prepend puts updates read before collect back in front of the trace.
func (tr *trace) prepend(labels ...string) {
	for _, l := range slices.Backward(labels) {
		switch kind, text, _ := strings.Cut(l, ":"); kind {
		case "chunk":
			tr.chunks = slices.Insert(tr.chunks, 0, text)
		case "message":
			tr.messages = slices.Insert(tr.messages, 0, text)
		case "event":
			tr.events = slices.Insert(tr.events, 0, text)
		}
	}
}

// label is "chunk:<text>", "message:<role>:<content>" or "event:<type>",
// or "" unless exactly one record is set.
func label(u client.Update) string {
	switch {
	case u.Chunk != nil && u.Message == nil && u.Event == nil:
		text := ""
		if u.Chunk.Delta != nil {
			text = u.Chunk.Delta.Text
		}
		return "chunk:" + text
	case u.Message != nil && u.Chunk == nil && u.Event == nil:
		return "message:" + string(u.Message.Role) + ":" + u.Message.Content
	case u.Event != nil && u.Chunk == nil && u.Message == nil:
		return "event:" + u.Event.Type
	}
	return ""
}

func turnOf(u client.Update) string {
	switch {
	case u.Chunk != nil:
		return u.Chunk.TurnID
	case u.Message != nil:
		return u.Message.TurnID
	case u.Event != nil:
		return u.Event.TurnID
	}
	return ""
}

// checkTrace compares the per-stream sequences of a trace and checks that
// stream sequences increase and the terminal event came last.
func checkTrace(t *testing.T, got trace, chunks, messages, events []string) {
	t.Helper()
	if !slices.Equal(got.chunks, chunks) {
		t.Errorf("chunks = %s; want %s", brief(got.chunks), brief(chunks))
	}
	if !slices.Equal(got.messages, messages) {
		t.Errorf("messages = %s; want %s", brief(got.messages), brief(messages))
	}
	if !slices.Equal(got.events, events) {
		t.Errorf("events = %s; want %s", brief(got.events), brief(events))
	}
	for kind, seqs := range got.seqs {
		for i := 1; i < len(seqs); i++ {
			if seqs[i] <= seqs[i-1] {
				t.Errorf("stream seqs of kind %d = %v; want increasing", kind, seqs)
				break
			}
		}
	}
	if n := len(got.all); n == 0 || got.all[n-1] != "event:"+events[len(events)-1] {
		t.Errorf("updates = %s; want the terminal event %q last", brief(got.all), events[len(events)-1])
	}
}

// brief quotes s, or its length and ends when it is long.
func brief(s []string) string {
	if len(s) <= 12 {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%d items %q ... %q", len(s), s[:3], s[len(s)-3:])
}

func userInput(text string) []wire.InputMessage {
	return []wire.InputMessage{{Role: wire.RoleUser, Content: text}}
}

var codecs = []struct {
	name  string
	codec wire.Codec
}{
	{"json", wire.JSON},
	{"msgpack", wire.Msgpack},
}

package client_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/wire"
)

// tapEvents writes audit events with the bus's writers, as workers do.
type tapEvents struct {
	t   *testing.T
	ctx context.Context
	e   *env
}

// emit writes one event per label "<session>/<n>" (n its step), in the
// codec of the session's writer: msgpack for sessions starting with "m".
func (w tapEvents) emit(labels ...string) {
	w.t.Helper()
	for _, l := range labels {
		session, step := parseTapLabel(w.t, l)
		codec := wire.Codec(wire.JSON)
		if strings.HasPrefix(session, "m") {
			codec = wire.Msgpack
		}
		tw := w.e.bus.Turn(session, "t1", codec, nil)
		ev := &wire.SessionEvent{Type: wire.EventLLMRequest, SessionID: session, TurnID: "t1", Step: step, Time: time.Now().UTC()}
		if err := tw.Event(ev); err != nil {
			w.t.Fatalf("Event(%s) = %v; want nil", l, err)
		}
		if err := tw.Flush(w.ctx); err != nil {
			w.t.Fatalf("Flush(%s) = %v; want nil", l, err)
		}
	}
}

// fence takes session's lease, as a worker starting a turn does: it writes
// the lease's fence markers, one on <prefix>.event.=fence.<session>.
func (w tapEvents) fence(session string) {
	w.t.Helper()
	st, err := w.e.bus.State(w.ctx)
	if err != nil {
		w.t.Fatalf("State() = %v; want nil", err)
	}
	if _, err := w.e.bus.TakeLease(w.ctx, st, session, "t1", 1, "tap test"); err != nil {
		w.t.Fatalf("TakeLease(%s) = %v; want nil", session, err)
	}
}

func parseTapLabel(t *testing.T, l string) (string, int) {
	t.Helper()
	var step int
	session, n, _ := strings.Cut(l, "/")
	if _, err := fmt.Sscan(n, &step); err != nil {
		t.Fatalf("label %q: %v", l, err)
	}
	return session, step
}

func tapLabel(ev *wire.SessionEvent) string { return fmt.Sprintf("%s/%d", ev.SessionID, ev.Step) }

// tapDropper drops the doorbells (live records) of the events it lists,
// each time one is republished, as lost republishes would be.
type tapDropper struct {
	mu      sync.Mutex
	labels  []string
	dropped []string
}

func (d *tapDropper) drop(m *nats.Msg) bool {
	var ev wire.SessionEvent
	if err := wire.Decode(m.Header.Get(wire.HeaderContentType), m.Data, &ev); err != nil {
		return false
	}
	l := tapLabel(&ev)
	d.mu.Lock()
	defer d.mu.Unlock()
	if !slices.Contains(d.labels, l) {
		return false
	}
	d.dropped = append(d.dropped, l)
	return true
}

func (d *tapDropper) check(t *testing.T) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if got := slices.Sorted(slices.Values(d.dropped)); !slices.Equal(got, slices.Sorted(slices.Values(d.labels))) {
		t.Errorf("doorbells dropped = %q; want %q once each", got, d.labels)
	}
}

// nextEvents calls Next n times and returns the events' labels, checking
// that stream sequences increase.
func nextEvents(ctx context.Context, t *testing.T, tap *client.Tap, n int) []string {
	t.Helper()
	var got []string
	var last uint64
	for range n {
		u, err := tap.Next(ctx)
		if err != nil {
			t.Fatalf("Next() = %v after %q; want an event", err, got)
		}
		if u.Event == nil || u.Chunk != nil || u.Message != nil {
			t.Fatalf("Next() = %+v after %q; want an event only", u, got)
		}
		if u.StreamSeq <= last {
			t.Errorf("Next() = %s at stream seq %d after seq %d; want increasing", tapLabel(u.Event), u.StreamSeq, last)
		}
		last = u.StreamSeq
		got = append(got, tapLabel(u.Event))
	}
	return got
}

// TestTap: a Tap delivers the events of every session (or of one) stored
// after its start, each once and in stream order, in JSON and msgpack,
// whether their doorbells ring or are lost (a lost one in the middle is
// read with the next, a lost last one by the tail read), and never a lease
// fence marker. It makes no consumer request.
func TestTap(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts client.TapOptions
		// drop lists the events whose doorbells are lost.
		drop []string
		// keep selects the events the Tap delivers.
		keep func(label string) bool
	}{
		{"all sessions from the first event", client.TapOptions{}, []string{"s1/2", "m2/3"}, func(string) bool { return true }},
		{"new events", client.TapOptions{New: true}, []string{"s3/2", "m2/3"},
			func(l string) bool { return !strings.HasSuffix(l, "/1") }},
		{"one session", client.TapOptions{Session: "m2"}, []string{"m2/2"},
			func(l string) bool { return strings.HasPrefix(l, "m2/") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := &tapDropper{labels: tt.drop}
			client.Tuning(t, 0, 0, d.drop)
			e := start(t)
			ctx := testContext(t)
			w := tapEvents{t: t, ctx: ctx, e: e}

			// Every consumer request of the tap's connection, known by its
			// inbox prefix.
			spy, err := e.nc.SubscribeSync("$JS.API.CONSUMER.>")
			if err != nil {
				t.Fatalf("SubscribeSync() = %v; want nil", err)
			}
			tapConn, err := nats.Connect(e.srv.URL(), nats.CustomInboxPrefix("_INBOX_tap"))
			if err != nil {
				t.Fatalf("Connect() = %v; want nil", err)
			}
			t.Cleanup(tapConn.Close)
			c, err := client.New(tapConn)
			if err != nil {
				t.Fatalf("New() = %v; want nil", err)
			}

			w.fence("s1")
			before := []string{"s1/1", "m2/1", "s3/1"}
			w.emit(before...)
			tap, err := c.Tap(ctx, tt.opts)
			if err != nil {
				t.Fatalf("Tap(%+v) = %v; want nil", tt.opts, err)
			}
			t.Cleanup(tap.Close)

			// While the Tap runs: a new session's fence marker, and events
			// of every session.
			during := []string{"m2/2", "s1/2", "s3/2", "s1/3"}
			w.emit(during[:2]...)
			w.fence("m2")
			w.emit(during[2:]...)
			var want []string
			for _, l := range slices.Concat(before, during) {
				if tt.keep(l) {
					want = append(want, l)
				}
			}
			if got := nextEvents(ctx, t, tap, len(want)); !slices.Equal(got, want) {
				t.Errorf("Tap(%+v) delivered %q; want %q", tt.opts, got, want)
			}
			// The Tap has read everything stored: an event whose doorbell
			// is lost, with nothing after it, is found by the tail read.
			w.emit("m2/3")
			if got := nextEvents(ctx, t, tap, 1); got[0] != "m2/3" {
				t.Errorf("Next() after %q = %q; want m2/3", want, got[0])
			}
			// Nothing came twice, and no fence marker: the next event is
			// the one written next.
			w.emit("m2/4")
			if got := nextEvents(ctx, t, tap, 1); got[0] != "m2/4" {
				t.Errorf("Next() after m2/3 = %q; want m2/4", got[0])
			}
			if n := tap.Skipped(); n != 0 {
				t.Errorf("Skipped() = %d; want 0", n)
			}
			d.check(t)

			// A Tap resumed after the Position delivers what follows.
			pos := tap.Position()
			tap.Close()
			if _, err := tap.Next(ctx); !errors.Is(err, client.ErrClosed) {
				t.Errorf("Next() after Close = %v; want ErrClosed", err)
			}
			w.emit("m2/5", "s1/5")
			resumed, err := c.Tap(ctx, client.TapOptions{Session: tt.opts.Session, After: pos})
			if err != nil {
				t.Fatalf("Tap(After %d) = %v; want nil", pos, err)
			}
			t.Cleanup(resumed.Close)
			var wantNext []string
			for _, l := range []string{"m2/5", "s1/5"} {
				if tt.keep(l) {
					wantNext = append(wantNext, l)
				}
			}
			if got := nextEvents(ctx, t, resumed, len(wantNext)); !slices.Equal(got, wantNext) {
				t.Errorf("resumed Tap delivered %q; want %q", got, wantNext)
			}

			for _, nc := range []*nats.Conn{tapConn, e.nc} {
				if err := nc.FlushWithContext(ctx); err != nil {
					t.Fatalf("Flush() = %v; want nil", err)
				}
			}
			for {
				m, err := spy.NextMsg(0)
				if err != nil {
					break // nothing pending
				}
				if strings.HasPrefix(m.Reply, "_INBOX_tap.") {
					t.Errorf("consumer request %s from the tap; want none", m.Subject)
				}
			}
		})
	}
}

// TestTapOptions: invalid options are refused before anything is read.
func TestTapOptions(t *testing.T) {
	e := start(t)
	c := newClient(t, e)
	for _, tt := range []struct {
		name string
		opts client.TapOptions
	}{
		{"session not a token", client.TapOptions{Session: "a.b"}},
		{"session a wildcard", client.TapOptions{Session: "*"}},
		{"new and after", client.TapOptions{New: true, After: 3}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tap, err := c.Tap(testContext(t), tt.opts)
			if err == nil {
				tap.Close()
				t.Fatalf("Tap(%+v) = nil error; want one", tt.opts)
			}
			var verr *wire.ValidationError
			if !errors.As(err, &verr) && !errors.Is(err, client.ErrInvalidOption) {
				t.Errorf("Tap(%+v) = %v; want a *wire.ValidationError or ErrInvalidOption", tt.opts, err)
			}
		})
	}
}

// TestTapEnds: Next returns ctx's error when ctx ends (the Tap stays
// usable), and a closed connection's error once it closed.
func TestTapEnds(t *testing.T) {
	e := start(t)
	nc := e.srv.Connect()
	c, err := client.New(nc)
	if err != nil {
		t.Fatalf("New() = %v; want nil", err)
	}
	tap, err := c.Tap(testContext(t), client.TapOptions{})
	if err != nil {
		t.Fatalf("Tap() = %v; want nil", err)
	}
	t.Cleanup(tap.Close)
	ctx, cancel := context.WithCancel(testContext(t))
	cancel()
	if _, err := tap.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Next(cancelled ctx) = %v; want context.Canceled", err)
	}
	w := tapEvents{t: t, ctx: testContext(t), e: e}
	w.emit("s1/1")
	if got := nextEvents(testContext(t), t, tap, 1); got[0] != "s1/1" {
		t.Errorf("Next() after a cancelled one = %q; want s1/1", got[0])
	}
	nc.Close()
	if _, err := tap.Next(testContext(t)); !errors.Is(err, jetstream.ErrConnectionClosed) {
		t.Errorf("Next() on a closed connection = %v; want ErrConnectionClosed", err)
	}
}

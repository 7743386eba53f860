package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/wire"
)

type textCodec struct{ wire.Codec }

func (textCodec) ContentType() string { return "text/plain" }

func TestNew(t *testing.T) {
	e := start(t)
	tests := []struct {
		name    string
		nc      *nats.Conn
		opts    []client.Option
		wantErr error
	}{
		{"defaults", e.nc, nil, nil},
		{"prefix", e.nc, []client.Option{client.WithPrefix("acme")}, nil},
		{"dotted prefix", e.nc, []client.Option{client.WithPrefix("acme.turn")}, nil},
		{"msgpack", e.nc, []client.Option{client.WithCodec(wire.Msgpack)}, nil},
		{"nil conn", nil, nil, nats.ErrInvalidConnection},
		{"empty prefix", e.nc, []client.Option{client.WithPrefix("")}, client.ErrInvalidOption},
		{"wildcard prefix", e.nc, []client.Option{client.WithPrefix("turn.*")}, client.ErrInvalidOption},
		{"tail wildcard prefix", e.nc, []client.Option{client.WithPrefix(">")}, client.ErrInvalidOption},
		{"empty token prefix", e.nc, []client.Option{client.WithPrefix("a..b")}, client.ErrInvalidOption},
		{"trailing dot prefix", e.nc, []client.Option{client.WithPrefix("turn.")}, client.ErrInvalidOption},
		{"space in prefix", e.nc, []client.Option{client.WithPrefix("my turn")}, client.ErrInvalidOption},
		{"nil codec", e.nc, []client.Option{client.WithCodec(nil)}, client.ErrInvalidOption},
		{"unknown content type", e.nc, []client.Option{client.WithCodec(textCodec{wire.JSON})}, client.ErrInvalidOption},
		{"nil option", e.nc, []client.Option{nil}, client.ErrInvalidOption},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := client.New(tt.nc, tt.opts...)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("New(%s) = %v; want %v", tt.name, err, tt.wantErr)
			}
			if (c == nil) != (tt.wantErr != nil) {
				t.Errorf("New(%s) client = %v; want non-nil only without error", tt.name, c)
			}
		})
	}
}

func TestInvalidTokens(t *testing.T) {
	e := start(t)
	c := newClient(t, e)
	ctx := testContext(t)
	tests := []struct {
		name       string
		call       func() error
		wantReason string
	}{
		{"Submit empty session", func() error {
			_, err := c.Submit(ctx, wire.TurnRequest{Input: userInput("hi")})
			return err
		}, wire.ReasonInvalidSessionID},
		{"Submit dotted session", func() error {
			_, err := c.Submit(ctx, wire.TurnRequest{SessionID: "a.b", Input: userInput("hi")})
			return err
		}, wire.ReasonInvalidSessionID},
		{"Submit wildcard turn", func() error {
			_, err := c.Submit(ctx, wire.TurnRequest{SessionID: "s1", TurnID: "t*", Input: userInput("hi")})
			return err
		}, wire.ReasonInvalidTurnID},
		{"Submit long turn", func() error {
			_, err := c.Submit(ctx, wire.TurnRequest{SessionID: "s1", TurnID: string(make([]byte, 129)), Input: userInput("hi")})
			return err
		}, wire.ReasonInvalidTurnID},
		{"Follow space in session", func() error {
			_, err := c.Follow(ctx, "s 1", "t1")
			return err
		}, wire.ReasonInvalidSessionID},
		{"Follow empty turn", func() error {
			_, err := c.Follow(ctx, "s1", "")
			return err
		}, wire.ReasonInvalidTurnID},
		{"Cancel empty session", func() error { return c.Cancel(ctx, "", "t1") }, wire.ReasonInvalidSessionID},
		{"Cancel dotted turn", func() error { return c.Cancel(ctx, "s1", "t.1") }, wire.ReasonInvalidTurnID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			var ve *wire.ValidationError
			if !errors.As(err, &ve) || ve.Reason != tt.wantReason {
				t.Errorf("%s = %v; want a *wire.ValidationError with reason %s", tt.name, err, tt.wantReason)
			}
		})
	}
}

func TestSubmitPublishesRequest(t *testing.T) {
	for _, cc := range codecs {
		t.Run(cc.name, func(t *testing.T) {
			e := start(t)
			ctx := testContext(t)
			c := newClient(t, e, client.WithCodec(cc.codec))
			req := wire.TurnRequest{SessionID: "s1", Input: userInput("What time is it in Paris?"), Route: "default"}

			tr, err := c.Submit(ctx, req)
			if err != nil {
				t.Fatalf("Submit() = %v; want nil", err)
			}
			closeTurn(t, tr)
			if !wire.ValidToken(tr.ID()) || tr.Session() != "s1" {
				t.Fatalf("Submit() turn = %s/%s; want s1/<a generated token>", tr.Session(), tr.ID())
			}

			stream, err := e.js.Stream(ctx, wire.StreamSubmit)
			if err != nil {
				t.Fatalf("Stream(%s) = %v; want nil", wire.StreamSubmit, err)
			}
			subject := wire.Subjects{}.Submit("s1")
			m, err := stream.GetLastMsgForSubject(ctx, subject)
			if err != nil {
				t.Fatalf("GetLastMsgForSubject(%s) = %v; want the request", subject, err)
			}
			if got, want := m.Header.Get(jetstream.MsgIDHeader), client.MsgID(tr.Session(), tr.ID()); got != want {
				t.Errorf("request %s = %q; want %q", jetstream.MsgIDHeader, got, want)
			}
			if got := m.Header.Get(wire.HeaderContentType); got != cc.codec.ContentType() {
				t.Errorf("request %s = %q; want %q", wire.HeaderContentType, got, cc.codec.ContentType())
			}
			if cc.codec == wire.Msgpack && json.Valid(m.Data) {
				t.Errorf("msgpack request body = %q; want msgpack, not JSON", m.Data)
			}
			var got wire.TurnRequest
			if err := cc.codec.Unmarshal(m.Data, &got); err != nil {
				t.Fatalf("Unmarshal(request) = %v; want nil", err)
			}
			if got.SessionID != "s1" || got.TurnID != tr.ID() || got.Route != "default" ||
				len(got.Input) != 1 || got.Input[0] != req.Input[0] {
				t.Errorf("stored request = %+v; want %+v with turn_id %s", got, req, tr.ID())
			}
			if err := got.Validate("s1", wire.Limits{}); err != nil {
				t.Errorf("stored request Validate() = %v; want nil", err)
			}

			// The same turn id again is deduplicated by JetStream.
			req.TurnID = tr.ID()
			dup, err := c.Submit(ctx, req)
			if err != nil {
				t.Fatalf("Submit(same turn id) = %v; want nil", err)
			}
			closeTurn(t, dup)
			if dup.ID() != tr.ID() {
				t.Errorf("Submit(same turn id).ID() = %s; want %s", dup.ID(), tr.ID())
			}
			if n := storedRequests(ctx, t, stream); n != 1 {
				t.Errorf("stored requests after a duplicate Submit = %d; want 1", n)
			}

			// A new request without a turn id gets a new one.
			req.TurnID = ""
			other, err := c.Submit(ctx, req)
			if err != nil {
				t.Fatalf("Submit(no turn id) = %v; want nil", err)
			}
			closeTurn(t, other)
			if other.ID() == tr.ID() {
				t.Errorf("Submit(no turn id).ID() = %s; want a fresh id", other.ID())
			}
			if n := storedRequests(ctx, t, stream); n != 2 {
				t.Errorf("stored requests after a second turn = %d; want 2", n)
			}
		})
	}
}

func storedRequests(ctx context.Context, t *testing.T, s jetstream.Stream) uint64 {
	t.Helper()
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatalf("Info() = %v; want nil", err)
	}
	return info.State.Msgs
}

// TestSubmitFollowsTurn simulates a worker: it pulls the request and writes
// a turn, interleaved with another turn of the same session.
func TestSubmitFollowsTurn(t *testing.T) {
	for _, cc := range codecs {
		t.Run(cc.name, func(t *testing.T) {
			e := start(t)
			ctx := testContext(t)
			c := newClient(t, e, client.WithCodec(cc.codec))

			// An earlier turn of the session, finished before the submit.
			before := newWorker(ctx, t, e, "s1", "t0", wire.JSON)
			before.message(wire.RoleUser, "earlier")
			before.chunks("old")
			before.terminal(wire.EventTurnCompleted)

			tr, err := c.Submit(ctx, wire.TurnRequest{SessionID: "s1", TurnID: "t1", Input: userInput("hi")})
			if err != nil {
				t.Fatalf("Submit() = %v; want nil", err)
			}
			closeTurn(t, tr)

			req, codec := pullRequest(ctx, t, e)
			if codec != cc.codec || req.TurnID != "t1" {
				t.Fatalf("pulled request = %s in %s; want t1 in %s", req.TurnID, codec.ContentType(), cc.codec.ContentType())
			}
			w := newWorker(ctx, t, e, req.SessionID, req.TurnID, codec)
			other := newWorker(ctx, t, e, "s1", "t2", codec)
			w.event(wire.EventTurnAccepted)
			w.message(wire.RoleUser, req.Input[0].Content)
			w.event(wire.EventLLMRequest)
			other.event(wire.EventTurnAccepted)
			other.message(wire.RoleUser, "not mine")
			w.chunks("Hel", "lo", " world")
			other.chunks("nope")
			other.terminal(wire.EventTurnCompleted)
			w.event(wire.EventLLMFinish)
			w.message(wire.RoleAssistant, "Hello world")
			w.terminal(wire.EventTurnCompleted)

			got := collect(ctx, t, tr)
			checkTrace(t, got,
				[]string{"Hel", "lo", " world"},
				[]string{"user:hi", "assistant:Hello world"},
				[]string{wire.EventTurnAccepted, wire.EventLLMRequest, wire.EventLLMFinish, wire.EventTurnCompleted})
			if n := tr.Skipped(); n != 0 {
				t.Errorf("Skipped() = %d; want 0", n)
			}
			// Next stays at the end; Close after the end is harmless.
			for range 2 {
				if _, err := tr.Next(ctx); !errors.Is(err, io.EOF) {
					t.Errorf("Next() after the end = %v; want io.EOF", err)
				}
				tr.Close()
			}
		})
	}
}

// TestTerminalBeforeRecordsRead writes a whole turn, many chunks included,
// before anyone follows it: the terminal event can arrive before most
// chunks, and must still come last.
func TestTerminalBeforeRecordsRead(t *testing.T) {
	tests := []struct {
		name   string
		chunks int
	}{
		{"no chunks", 0},
		{"one chunk", 1},
		{"many chunks", 600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t)
			ctx := testContext(t)
			c := newClient(t, e)

			w := newWorker(ctx, t, e, "s1", "t1", wire.JSON)
			w.event(wire.EventTurnAccepted)
			w.message(wire.RoleUser, "count")
			var want []string
			for i := range tt.chunks {
				want = append(want, fmt.Sprint(i))
			}
			w.chunks(want...)
			w.message(wire.RoleAssistant, "done")
			w.terminal(wire.EventTurnCompleted)
			// A later turn of the session must not be needed, nor delivered.
			later := newWorker(ctx, t, e, "s1", "t2", wire.JSON)
			later.message(wire.RoleUser, "later")
			later.terminal(wire.EventTurnCompleted)

			tr, err := c.Follow(ctx, "s1", "t1")
			if err != nil {
				t.Fatalf("Follow() = %v; want nil", err)
			}
			closeTurn(t, tr)
			got := collect(ctx, t, tr)
			checkTrace(t, got, want,
				[]string{"user:count", "assistant:done"},
				[]string{wire.EventTurnAccepted, wire.EventTurnCompleted})
		})
	}
}

func TestFollowMidTurn(t *testing.T) {
	e := start(t)
	ctx := testContext(t)
	c := newClient(t, e)

	w := newWorker(ctx, t, e, "s1", "t1", wire.JSON)
	w.event(wire.EventTurnAccepted)
	w.message(wire.RoleUser, "go")
	w.chunks("a", "b", "c")

	tr, err := c.Follow(ctx, "s1", "t1")
	if err != nil {
		t.Fatalf("Follow() = %v; want nil", err)
	}
	closeTurn(t, tr)
	// Read some of what is there, then let the worker go on.
	first, err := tr.Next(ctx)
	if err != nil {
		t.Fatalf("Next() = %v; want an update", err)
	}

	w.chunks("d", "e")
	w.event(wire.EventLLMFinish)
	w.message(wire.RoleAssistant, "abcde")
	w.terminal(wire.EventTurnCompleted)

	got := collect(ctx, t, tr)
	got.prepend(label(first))
	checkTrace(t, got,
		[]string{"a", "b", "c", "d", "e"},
		[]string{"user:go", "assistant:abcde"},
		[]string{wire.EventTurnAccepted, wire.EventLLMFinish, wire.EventTurnCompleted})
}

func TestWait(t *testing.T) {
	tests := []struct {
		name     string
		earlier  bool // an earlier turn left messages in the session log
		input    bool // the worker appends the user input
		replies  []string
		terminal string
		wantText string
	}{
		{"completed", false, true, []string{"Let me check.", "It is noon in Paris."}, wire.EventTurnCompleted, "It is noon in Paris."},
		{"completed after another turn", true, true, []string{"Noon."}, wire.EventTurnCompleted, "Noon."},
		{"failed", false, true, nil, wire.EventTurnFailed, ""},
		{"rejected after another turn", true, false, nil, wire.EventTurnRejected, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t)
			ctx := testContext(t)
			c := newClient(t, e)
			if tt.earlier {
				w := newWorker(ctx, t, e, "s1", "t0", wire.JSON)
				w.message(wire.RoleUser, "before")
				w.message(wire.RoleAssistant, "earlier answer")
				w.terminal(wire.EventTurnCompleted)
			}
			tr, err := c.Submit(ctx, wire.TurnRequest{SessionID: "s1", Input: userInput("time?")})
			if err != nil {
				t.Fatalf("Submit() = %v; want nil", err)
			}
			closeTurn(t, tr)

			req, codec := pullRequest(ctx, t, e)
			w := newWorker(ctx, t, e, req.SessionID, req.TurnID, codec)
			wantMessages := 0
			if tt.input {
				w.message(wire.RoleUser, "time?")
				wantMessages++
			}
			for _, reply := range tt.replies {
				w.chunks(reply)
				w.message(wire.RoleAssistant, reply)
				wantMessages++
			}
			w.terminal(tt.terminal)

			res, err := tr.Wait(ctx)
			if err != nil {
				t.Fatalf("Wait() = %v; want nil", err)
			}
			if res.Text != tt.wantText {
				t.Errorf("Wait().Text = %q; want %q", res.Text, tt.wantText)
			}
			if res.Terminal.Type != tt.terminal || res.Terminal.TurnID != tr.ID() {
				t.Errorf("Wait().Terminal = %s of %s; want %s of %s", res.Terminal.Type, res.Terminal.TurnID, tt.terminal, tr.ID())
			}
			if res.Chunks != len(tt.replies) {
				t.Errorf("Wait().Chunks = %d; want %d", res.Chunks, len(tt.replies))
			}
			if len(res.Messages) != wantMessages {
				t.Errorf("len(Wait().Messages) = %d; want %d", len(res.Messages), wantMessages)
			}
			if n := len(res.Events); n != 1 || res.Events[0].Type != tt.terminal {
				t.Errorf("Wait().Events = %+v; want just the terminal event", res.Events)
			}
		})
	}
}

// TestSubmitDuplicateFollowsFromStart: resubmitting a turn that already ran
// is deduplicated, and the returned Turn still sees the whole turn.
func TestSubmitDuplicateFollowsFromStart(t *testing.T) {
	e := start(t)
	ctx := testContext(t)
	c := newClient(t, e)
	req := wire.TurnRequest{SessionID: "s1", TurnID: "t1", Input: userInput("hi")}
	first, err := c.Submit(ctx, req)
	if err != nil {
		t.Fatalf("Submit() = %v; want nil", err)
	}
	first.Close()

	req2, codec := pullRequest(ctx, t, e)
	w := newWorker(ctx, t, e, req2.SessionID, req2.TurnID, codec)
	w.message(wire.RoleUser, "hi")
	w.chunks("hello")
	w.message(wire.RoleAssistant, "hello")
	w.terminal(wire.EventTurnCompleted)

	again, err := c.Submit(ctx, req)
	if err != nil {
		t.Fatalf("Submit(again) = %v; want nil", err)
	}
	closeTurn(t, again)
	res, err := again.Wait(ctx)
	if err != nil {
		t.Fatalf("Wait() = %v; want nil", err)
	}
	if res.Text != "hello" || res.Chunks != 1 || len(res.Messages) != 2 || res.Terminal.Type != wire.EventTurnCompleted {
		t.Errorf("Wait() after a duplicate Submit = %+v; want the whole turn", res)
	}
}

func TestCancel(t *testing.T) {
	tests := []struct {
		name    string
		prefix  string
		codec   wire.Codec
		turn    string
		subject string
	}{
		{"json", "", wire.JSON, "t1", "turn.cancel.s1"},
		{"msgpack", "", wire.Msgpack, "t1", "turn.cancel.s1"},
		{"whole session", "", wire.JSON, "", "turn.cancel.s1"},
		{"prefix", "acme", wire.JSON, "t1", "acme.cancel.s1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t)
			ctx := testContext(t)
			opts := []client.Option{client.WithCodec(tt.codec)}
			if tt.prefix != "" {
				opts = append(opts, client.WithPrefix(tt.prefix))
			}
			c := newClient(t, e, opts...)
			sub, err := e.nc.SubscribeSync(tt.subject)
			if err != nil {
				t.Fatalf("SubscribeSync(%s) = %v; want nil", tt.subject, err)
			}
			t.Cleanup(func() { _ = sub.Unsubscribe() })
			if err := e.nc.FlushWithContext(ctx); err != nil {
				t.Fatalf("Flush() = %v; want nil", err)
			}

			got := make(chan *nats.Msg, 1)
			go func() {
				m, err := sub.NextMsgWithContext(ctx)
				if err != nil {
					t.Errorf("NextMsg(%s) = %v; want the cancel", tt.subject, err)
					close(got)
					return
				}
				got <- m
				if err := m.Respond(nil); err != nil { // a worker's answer
					t.Errorf("Respond() = %v", err)
				}
			}()
			if err := c.Cancel(ctx, "s1", tt.turn); err != nil {
				t.Fatalf("Cancel(s1, %q) = %v; want nil", tt.turn, err)
			}
			m := <-got
			if m == nil {
				t.FailNow()
			}
			if got := m.Header.Get(wire.HeaderContentType); got != tt.codec.ContentType() {
				t.Errorf("cancel %s = %q; want %q", wire.HeaderContentType, got, tt.codec.ContentType())
			}
			var req wire.Cancel
			if err := wire.Decode(m.Header.Get(wire.HeaderContentType), m.Data, &req); err != nil {
				t.Fatalf("Decode(cancel) = %v; want nil", err)
			}
			if req.TurnID != tt.turn {
				t.Errorf("Cancel(s1, %q) published turn_id %q; want %q", tt.turn, req.TurnID, tt.turn)
			}
		})
	}
}

// TestCancelUnanswered: a cancel that no worker receives, or that the
// worker could not store, is an error.
func TestCancelUnanswered(t *testing.T) {
	e := start(t)
	ctx := testContext(t)
	c := newClient(t, e)
	if err := c.Cancel(ctx, "nobody", "t1"); !errors.Is(err, client.ErrNoWorkers) {
		t.Errorf("Cancel() with no worker listening = %v; want ErrNoWorkers", err)
	}
	sub, err := e.nc.Subscribe("turn.cancel.sick", func(m *nats.Msg) {
		_ = m.RespondMsg(&nats.Msg{Subject: m.Reply, Header: nats.Header{wire.HeaderCancelError: {wire.CancelNotStored}}})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := e.nc.FlushWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Cancel(ctx, "sick", "t1"); !errors.Is(err, client.ErrCancelNotStored) {
		t.Errorf("Cancel() answered not stored = %v; want ErrCancelNotStored", err)
	}
}

func TestNextContext(t *testing.T) {
	e := start(t)
	ctx := testContext(t)
	c := newClient(t, e)
	tr, err := c.Submit(ctx, wire.TurnRequest{SessionID: "s1", TurnID: "t1", Input: userInput("hi")})
	if err != nil {
		t.Fatalf("Submit() = %v; want nil", err)
	}
	closeTurn(t, tr)

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := tr.Next(canceled); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next(canceled ctx) = %v; want context.Canceled", err)
	}

	// Canceled while blocked: nothing is published yet.
	blocked, cancel := context.WithCancel(ctx)
	go cancel()
	if _, err := tr.Next(blocked); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next(ctx canceled while waiting) = %v; want context.Canceled", err)
	}

	// The turn is still usable with a live context.
	w := newWorker(ctx, t, e, "s1", "t1", wire.JSON)
	w.chunks("x")
	w.terminal(wire.EventTurnCompleted)
	u, err := tr.Next(ctx)
	if err != nil || u.Chunk == nil {
		t.Fatalf("Next() after a canceled Next = %+v, %v; want the chunk", u, err)
	}

	tr.Close()
	if _, err := tr.Next(ctx); !errors.Is(err, client.ErrClosed) {
		t.Errorf("Next() after Close = %v; want ErrClosed", err)
	}
}

// TestSkipsUndecodable: a bad record must not end a follow.
func TestSkipsUndecodable(t *testing.T) {
	e := start(t)
	ctx := testContext(t)
	c := newClient(t, e)
	tr, err := c.Submit(ctx, wire.TurnRequest{SessionID: "s1", TurnID: "t1", Input: userInput("hi")})
	if err != nil {
		t.Fatalf("Submit() = %v; want nil", err)
	}
	closeTurn(t, tr)

	subj := wire.Subjects{}
	bad := []*nats.Msg{
		{Subject: subj.Event("s1"), Data: []byte(`{"type":`), Header: nats.Header{wire.HeaderContentType: {wire.ContentTypeJSON}}},
		{Subject: subj.Chunk("s1", "t1"), Data: []byte(`{}`), Header: nats.Header{wire.HeaderContentType: {"text/plain"}}},
		{Subject: subj.Message("s1"), Data: []byte{0xc1}, Header: nats.Header{wire.HeaderContentType: {wire.ContentTypeMsgpack}}},
	}
	w := newWorker(ctx, t, e, "s1", "t1", wire.JSON)
	w.event(wire.EventTurnAccepted)
	w.chunks("ok")
	w.message(wire.RoleAssistant, "ok")
	// After the last message: the worker's log reader would choke on it.
	for _, m := range bad {
		if _, err := e.js.PublishMsg(ctx, m); err != nil {
			t.Fatalf("PublishMsg(%s) = %v; want nil", m.Subject, err)
		}
	}
	w.terminal(wire.EventTurnCompleted)

	got := collect(ctx, t, tr)
	checkTrace(t, got, []string{"ok"}, []string{"assistant:ok"},
		[]string{wire.EventTurnAccepted, wire.EventTurnCompleted})
	if n := tr.Skipped(); n != len(bad) {
		t.Errorf("Skipped() = %d; want %d", n, len(bad))
	}
}

// TestConnectionClosed: a follow that can no longer read fails instead of
// blocking forever.
func TestConnectionClosed(t *testing.T) {
	e := start(t)
	ctx := testContext(t)
	nc := e.srv.Connect()
	c, err := client.New(nc)
	if err != nil {
		t.Fatalf("New() = %v; want nil", err)
	}
	tr, err := c.Follow(ctx, "s1", "t1")
	if err != nil {
		t.Fatalf("Follow() = %v; want nil", err)
	}
	closeTurn(t, tr)
	nc.Close()
	for range 2 { // the failure sticks
		_, err := tr.Next(ctx)
		if !errors.Is(err, jetstream.ErrConnectionClosed) {
			t.Errorf("Next() after the connection closed = %v; want jetstream.ErrConnectionClosed", err)
		}
	}
}

// TestServerRestart: a follower resubscribes when the server comes back and
// goes on where it stopped, without losing or repeating records.
func TestServerRestart(t *testing.T) {
	e := start(t)
	ctx := testContext(t)
	c := newClient(t, e)
	tr, err := c.Submit(ctx, wire.TurnRequest{SessionID: "s1", TurnID: "t1", Input: userInput("hi")})
	if err != nil {
		t.Fatalf("Submit() = %v; want nil", err)
	}
	closeTurn(t, tr)
	w := newWorker(ctx, t, e, "s1", "t1", wire.JSON)
	w.event(wire.EventTurnAccepted)
	w.message(wire.RoleUser, "hi")
	w.chunks("a", "b")
	var before []string
	for len(before) < 4 {
		u, err := tr.Next(ctx)
		if err != nil {
			t.Fatalf("Next() = %v; want an update", err)
		}
		before = append(before, label(u))
	}

	e.srv.Restart()
	natstest.WaitConnected(t, e.nc)
	// The worker writes on a new connection: an async publish on the
	// reconnected one can still be failed by its publisher's late handling
	// of the disconnect.
	nc, js := e.srv.JetStream()
	b, err := bus.New(ctx, js, wire.Subjects{})
	if err != nil {
		t.Fatalf("bus.New() = %v; want nil", err)
	}
	w = newWorker(ctx, t, &env{srv: e.srv, nc: nc, js: js, bus: b}, "s1", "t1", wire.JSON)
	w.chunks("c")
	w.message(wire.RoleAssistant, "abc")
	w.terminal(wire.EventTurnCompleted)

	got := collect(ctx, t, tr)
	got.prepend(before...)
	checkTrace(t, got, []string{"a", "b", "c"}, []string{"user:hi", "assistant:abc"},
		[]string{wire.EventTurnAccepted, wire.EventTurnCompleted})
}

// TestSubmitWithoutTopology: before any worker created the streams, a
// submit fails at once, saying so.
func TestSubmitWithoutTopology(t *testing.T) {
	nc, _ := natstest.Start(t).JetStream()
	c, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Submit(testContext(t), wire.TurnRequest{SessionID: "s1", TurnID: "t1", Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "hi"}}})
	if !errors.Is(err, jetstream.ErrStreamNotFound) || !strings.Contains(err.Error(), "no worker has created the topology") {
		t.Fatalf("Submit() = %v; want ErrStreamNotFound naming the missing topology", err)
	}
}

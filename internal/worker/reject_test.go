package worker_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestInvalidRequests: every invalid request gets turn.rejected with a
// reason, is terminated (never redelivered), is copied to the dead-letter
// subject, and the worker goes on to serve the next valid turn.
func TestInvalidRequests(t *testing.T) {
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{}))
	e.startWorker()
	tests := []struct {
		name         string
		subject      string
		contentType  string
		body         string
		eventSession string
		reason       string
	}{
		{"bad json", "turn.submit.r1", "", `{"session_id":"r1","input":[`, "r1", wire.ReasonMalformed},
		{"bad msgpack", "turn.submit.r2", "application/msgpack", "\xde\xff\xff\x01", "r2", wire.ReasonMalformed},
		{"session id not a subject token", "turn.submit.a%b", "", `{"session_id":"a%b","turn_id":"t1","input":[{"role":"user","content":"hi"}]}`, "_invalid", wire.ReasonInvalidSubject},
		{"session id differs from subject", "turn.submit.r3", "", `{"session_id":"other","turn_id":"t1","input":[{"role":"user","content":"hi"}]}`, "r3", wire.ReasonSessionMismatch},
		{"missing input", "turn.submit.r4", "", `{"session_id":"r4","turn_id":"t1"}`, "r4", wire.ReasonMissingInput},
		{"unknown field", "turn.submit.r5", "", `{"session_id":"r5","turn_id":"t1","input":[{"role":"user","content":"hi"}],"budget":{}}`, "r5", wire.ReasonUnknownField},
		{"unsupported content type", "turn.submit.r6", "text/plain", `hi`, "r6", wire.ReasonContentType},
		{"unknown route", "turn.submit.r7", "", `{"session_id":"r7","turn_id":"t1","route":"nope","input":[{"role":"user","content":"hi"}]}`, "r7", wire.ReasonUnknownRoute},
		{"tool role in input", "turn.submit.r8", "", `{"session_id":"r8","turn_id":"t1","input":[{"role":"tool","content":"hi"}]}`, "r8", wire.ReasonInvalidRole},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := ctxFor(t)
			m := &nats.Msg{Subject: tt.subject, Data: []byte(tt.body), Header: nats.Header{}}
			if tt.contentType != "" {
				m.Header.Set("Content-Type", tt.contentType)
			}
			ack, err := e.js.PublishMsg(ctx, m)
			if err != nil {
				t.Fatal(err)
			}
			ev := waitRejected(t, e.js, tt.eventSession)
			if ev.Payload["reason"] != tt.reason {
				t.Errorf("turn.rejected reason = %v; want %s", ev.Payload["reason"], tt.reason)
			}
			// Terminated: gone from the work queue, not pending redelivery.
			s, err := e.js.Stream(ctx, wire.StreamSubmit)
			if err != nil {
				t.Fatal(err)
			}
			eventually(t, "the rejected request leaves the work queue", func() bool {
				_, err := s.GetMsg(ctx, ack.Sequence)
				return err != nil
			})
			deadMsgs := deadLetters(ctx, t, e.js)
			if deadMsgs[string(m.Data)] != tt.reason {
				t.Errorf("dead letter for %q has reason %q; want %q", tt.body, deadMsgs[string(m.Data)], tt.reason)
			}
		})
	}

	// The worker still serves valid turns.
	turn, err := e.client().Submit(ctxFor(t), wire.TurnRequest{SessionID: "r-ok", Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := turn.Wait(ctxFor(t))
	if err != nil || res.Terminal.Type != wire.EventTurnCompleted {
		t.Fatalf("valid turn after rejections: %v %+v; want completed", err, res)
	}
	cons, err := e.js.Consumer(ctxFor(t), wire.StreamSubmit, "turn-workers")
	if err != nil {
		t.Fatal(err)
	}
	// The terminal event is written before the request is acked.
	eventually(t, "every request is settled", func() bool {
		ci, err := cons.Info(ctxFor(t))
		return err == nil && ci.NumAckPending == 0 && ci.NumPending == 0
	})
	ci, err := cons.Info(ctxFor(t))
	if err != nil {
		t.Fatal(err)
	}
	if ci.NumRedelivered != 0 {
		t.Errorf("consumer redelivered %d; want 0 (rejections are terminated, never redelivered)", ci.NumRedelivered)
	}
}

func waitRejected(t *testing.T, js jetstream.JetStream, session string) wire.SessionEvent {
	t.Helper()
	ctx := ctxFor(t)
	s, err := js.Stream(ctx, wire.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"turn.event." + session}})
	if err != nil {
		t.Fatal(err)
	}
	it, err := cons.Messages()
	if err != nil {
		t.Fatal(err)
	}
	defer it.Stop()
	var last wire.SessionEvent
	for {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			t.Fatalf("no turn.rejected on %s: %v", session, err)
		}
		if err := wire.Decode(m.Headers().Get(wire.HeaderContentType), m.Data(), &last); err != nil {
			t.Fatal(err)
		}
		meta, _ := m.Metadata()
		if last.Type == wire.EventTurnRejected && meta.NumPending == 0 {
			return last
		}
	}
}

// deadLetters maps each dead-lettered body to its reject reason.
func deadLetters(ctx context.Context, t *testing.T, js jetstream.JetStream) map[string]string {
	t.Helper()
	s, err := js.Stream(ctx, wire.StreamDead)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			continue
		}
		out[string(m.Data)] = m.Header.Get(wire.HeaderRejectReason)
	}
	return out
}

// TestRejectionNamesUnknownField: a request with a field no request has is
// rejected unknown_field, naming it: in the turn.rejected event in its
// content-free form (keys of [A-Za-z0-9_$-] up to 32 bytes, others "[?]"),
// on the dead-letter copy in full (Turn-Reject-Field).
func TestRejectionNamesUnknownField(t *testing.T) {
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{}))
	e.startWorker()
	long := strings.Repeat("k", 40)
	tests := []struct {
		name, session, extra string
		event, dead          string
	}{
		{"top-level typo", "uf1", `,"budget":{}`, "budget", "budget"},
		{"nested", "uf2", `,"budgets":{"max_tokens":5}`, "budgets.max_tokens", "budgets.max_tokens"},
		{"case-folded", "uf3", `,"Route":"x"`, "Route", "Route"},
		{"key with a space", "uf4", `,"my secret key":1`, "[?]", `["my secret key"]`},
		{"key past 32 bytes", "uf5", `,"` + long + `":1`, "[?]", `["` + long[:32] + `..."]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := ctxFor(t)
			body := `{"session_id":"` + tt.session + `","turn_id":"t1","input":[{"role":"user","content":"hi"}]` + tt.extra + `}`
			if _, err := e.js.Publish(ctx, "turn.submit."+tt.session, []byte(body)); err != nil {
				t.Fatal(err)
			}
			ev := waitRejected(t, e.js, tt.session)
			if ev.Payload["reason"] != wire.ReasonUnknownField || ev.Payload["field"] != tt.event {
				t.Errorf("turn.rejected payload = %v; want reason unknown_field, field %q", ev.Payload, tt.event)
			}
			s, err := e.js.Stream(ctx, wire.StreamDead)
			if err != nil {
				t.Fatal(err)
			}
			var dead *jetstream.RawStreamMsg
			eventually(t, "the request is dead-lettered", func() bool {
				dead, err = s.GetLastMsgForSubject(ctx, "turn.dead."+tt.session)
				return err == nil
			})
			if got := dead.Header.Get(wire.HeaderRejectField); got != tt.dead {
				t.Errorf("dead letter %s = %q; want %q", wire.HeaderRejectField, got, tt.dead)
			}
		})
	}
}

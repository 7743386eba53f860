package worker_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestDerivedTurnIDs: a request without turn_id runs as the turn its
// Nats-Msg-Id names (the turn of a "<session>/<turn>" one), else as a
// derived turn id unique to the stored message: two requests never share
// one, and none is a sequence-like "t1" that a written id could be.
func TestDerivedTurnIDs(t *testing.T) {
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{}))
	e.startWorker()
	ctx := ctxFor(t)
	body := []byte(`{"session_id":"ids","input":[{"role":"user","content":"hi"}]}`)
	for _, msgID := range []string{"", "", "ids/mine", "plain-id"} {
		m := &nats.Msg{Subject: "turn.submit.ids", Data: body, Header: nats.Header{}}
		if msgID != "" {
			m.Header.Set(jetstream.MsgIDHeader, msgID)
		}
		if _, err := e.js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	var ids []string
	eventually(t, "the four turns complete", func() bool {
		events, _ := records[wire.SessionEvent](t, e.js, wire.StreamEvents, "turn.event.ids")
		ids = ids[:0]
		for _, ev := range events {
			if ev.Type == wire.EventTurnCompleted {
				ids = append(ids, ev.TurnID)
			}
		}
		return len(ids) == 4
	})
	if ids[2] != "mine" || ids[3] != "plain-id" {
		t.Errorf("turn ids from Nats-Msg-Id ids/mine and plain-id = %q, %q; want mine, plain-id", ids[2], ids[3])
	}
	derived := ids[:2]
	if derived[0] == derived[1] || slices.Contains(derived, "t1") || slices.Contains(derived, "t2") {
		t.Errorf("derived turn ids = %q; want two distinct ids, neither t1 nor t2", derived)
	}
	for _, id := range derived {
		if !strings.HasPrefix(id, "auto-") || !wire.ValidToken(id) {
			t.Errorf("derived turn id %q; want an auto- subject token", id)
		}
	}
}

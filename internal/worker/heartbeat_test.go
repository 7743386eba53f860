package worker_test

import (
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestHeartbeatsOutlastTheAckWait: turns that run for several ack waits
// (a slow provider) are kept alive by the worker's heartbeats (one loop for
// every running delivery): each is delivered once, accepted once, and ends
// once.
func TestHeartbeatsOutlastTheAckWait(t *testing.T) {
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{Latency: 250 * time.Millisecond}))
	e.cfg.Worker.AckWait = config.Duration(time.Second) // a text answer streams for about 5s
	e.startWorker()
	ctx := ctxFor(t)
	sessions := []string{"hb1", "hb2", "hb3"}
	for _, s := range sessions {
		req := `{"session_id":"` + s + `","turn_id":"t1","input":[{"role":"user","content":"take your time"}]}`
		if _, err := e.js.Publish(ctx, "turn.submit."+s, []byte(req)); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range sessions {
		if got := waitTerminal(t, e.js, s, "t1"); got.Type != wire.EventTurnCompleted {
			t.Fatalf("%s ended %s %v; want turn.completed", s, got.Type, got.Payload)
		}
		evs, _ := records[wire.SessionEvent](t, e.js, wire.StreamEvents, wire.Subjects{}.Event(s))
		if n := countTypes(evs)[wire.EventTurnAccepted]; n != 1 {
			t.Errorf("%s: %d turn.accepted events; want 1 (a delivery redelivered while it ran)", s, n)
		}
		for _, ev := range evs {
			if ev.Type == wire.EventTurnAccepted && ev.Payload["delivery"] != float64(1) {
				t.Errorf("%s accepted at delivery %v; want 1", s, ev.Payload["delivery"])
			}
		}
	}
}

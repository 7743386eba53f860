package worker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// heartbeats keeps the running deliveries from being redelivered: every
// period it tells the server each registered delivery is in progress. One
// goroutine beats for all of them (a goroutine per delivery would cost
// each turn in flight its stack).
type heartbeats struct {
	every time.Duration

	mu      sync.Mutex
	beating map[*beat]struct{}
}

// beat is one registered delivery.
type beat struct {
	msg delivery
	log zerolog.Logger
}

func newHeartbeats(every time.Duration) *heartbeats {
	return &heartbeats{every: every, beating: map[*beat]struct{}{}}
}

// add registers a delivery until stop is called. Its first beat comes
// within one period, as its ack wait is three.
func (h *heartbeats) add(msg delivery, log zerolog.Logger) (stop func()) {
	b := &beat{msg: msg, log: log}
	h.mu.Lock()
	h.beating[b] = struct{}{}
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		delete(h.beating, b)
		h.mu.Unlock()
	}
}

// run beats until ctx ends.
func (h *heartbeats) run(ctx context.Context) {
	t := time.NewTicker(h.every)
	defer t.Stop()
	var due []*beat
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h.mu.Lock()
		due = due[:0]
		for b := range h.beating {
			due = append(due, b)
		}
		h.mu.Unlock()
		for _, b := range due {
			// An in-progress ack is a publish, not a request: a beat never
			// waits for the server.
			// A delivery settled since it was listed is acked already:
			// nothing to keep alive.
			if err := b.msg.InProgress(); err != nil && !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
				b.log.Warn().Err(err).Msg("heartbeat failed")
			}
		}
		clear(due) // hold no delivery past its stop
	}
}

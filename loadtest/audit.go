package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/pkg/wire"
)

// Audit is the check of what the run stored, made once every request is
// settled: a follower stops at its turn's terminal event, so a delivery
// that ran the turn again after that (a redelivery, a second terminal
// event) is seen only here. Every turn of the run must have been accepted
// once, at its first delivery, with one terminal event, and the worker's
// consumer must have redelivered nothing.
type Audit struct {
	// Turns counts the turns with a stored event.
	Turns int `json:"turns"`
	// Exact counts those accepted once, at delivery 1, and ended once.
	Exact int `json:"exact"`
	// Redelivered is the worker consumer's count of requests delivered
	// more than once (ConsumerInfo.NumRedelivered) as it settled.
	Redelivered int `json:"redelivered"`
	// Unsettled counts requests still pending or unacknowledged when the
	// wait for them ended.
	Unsettled int      `json:"unsettled"`
	Problems  []string `json:"problems,omitempty"`
}

// OK reports an exact audit.
func (a *Audit) OK() bool {
	return a != nil && a.Exact == a.Turns && a.Redelivered == 0 && a.Unsettled == 0
}

// auditSettle bounds the wait for every request to be acknowledged.
const auditSettle = 2 * time.Minute

// audit waits for the worker's consumer to settle every request, then
// reads every event stored on TURN_EVENTS (the store is the run's own)
// and checks each turn.
func (p *profileRun) audit(ctx context.Context) (*Audit, error) {
	a := &Audit{}
	cons, err := p.js.Consumer(ctx, wire.StreamSubmit, bus.WorkerConsumer)
	if err != nil {
		return a, fmt.Errorf("loadtest: audit: the worker's consumer: %w", err)
	}
	deadline := time.Now().Add(auditSettle)
	for {
		info, err := cons.Info(ctx)
		if err != nil {
			return a, fmt.Errorf("loadtest: audit: the worker's consumer: %w", err)
		}
		a.Redelivered = info.NumRedelivered
		a.Unsettled = int(info.NumPending) + info.NumAckPending
		if a.Unsettled == 0 || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return a, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}

	type count struct{ accepted, first, terminals int }
	turns := map[string]*count{}
	var order []string
	oc, err := p.js.OrderedConsumer(ctx, wire.StreamEvents, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return a, fmt.Errorf("loadtest: audit: read %s: %w", wire.StreamEvents, err)
	}
	info, err := oc.Info(ctx)
	if err != nil {
		return a, fmt.Errorf("loadtest: audit: read %s: %w", wire.StreamEvents, err)
	}
	left := info.NumPending
	for left > 0 {
		batch, err := oc.Fetch(min(int(left), 1000), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return a, fmt.Errorf("loadtest: audit: read %s: %w", wire.StreamEvents, err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			var ev wire.SessionEvent
			if wire.Decode(m.Headers().Get(wire.HeaderContentType), m.Data(), &ev) != nil || ev.TurnID == "" {
				continue // a fence marker, or a session-wide event
			}
			key := ev.SessionID + "/" + ev.TurnID
			c := turns[key]
			if c == nil {
				c = &count{}
				turns[key] = c
				order = append(order, key)
			}
			switch {
			case ev.Terminal():
				c.terminals++
			case ev.Type == wire.EventTurnAccepted:
				c.accepted++
				if r := eventOf(&ev); r.Delivery == 1 && !r.Resumed {
					c.first++
				}
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return a, fmt.Errorf("loadtest: audit: read %s: %w", wire.StreamEvents, err)
		}
		if n == 0 {
			return a, fmt.Errorf("loadtest: audit: read %s: %d events not delivered", wire.StreamEvents, left)
		}
		left -= uint64(min(uint64(n), left))
	}
	for _, key := range order {
		c := turns[key]
		a.Turns++
		if c.accepted == 1 && c.first == 1 && c.terminals == 1 {
			a.Exact++
			continue
		}
		if len(a.Problems) < maxProblems {
			a.Problems = append(a.Problems, fmt.Sprintf("%s: %d turn.accepted (%d at a first delivery), %d terminal events", key, c.accepted, c.first, c.terminals))
		}
	}
	return a, nil
}

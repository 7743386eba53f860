package worker

import (
	"context"
	"time"

	"github.com/rs/zerolog"
)

// disposition is what happens to a delivery; settle is the one place that
// acks, naks or terminates.
type disposition uint8

const (
	// ack: the turn ended (its terminal event is stored) or was a duplicate.
	ack disposition = iota
	// nakSoon: hand back now (shutdown); another worker resumes at once.
	nakSoon
	// nakLater: hand back after a pause (NATS trouble); resume later.
	nakLater
	// term: never redeliver (invalid request, deliveries exhausted).
	term
)

// String names the disposition for logs.
func (d disposition) String() string {
	switch d {
	case ack:
		return "ack"
	case nakSoon:
		return "nak"
	case nakLater:
		return "nak_later"
	case term:
		return "term"
	}
	return "unknown"
}

// nakDelay is the pause before a troubled turn is retried.
const nakDelay = 2 * time.Second

func (w *Worker) settle(msg delivery, log zerolog.Logger, d disposition) {
	var err error
	switch d {
	case ack:
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = msg.DoubleAck(ctx)
	case nakSoon:
		err = msg.Nak()
	case nakLater:
		err = msg.NakWithDelay(nakDelay)
	case term:
		err = msg.Term()
	}
	if err != nil {
		// Redelivery repairs it: the next delivery finds the turn as
		// this one left it.
		log.Warn().Err(err).Str("disposition", d.String()).Msg("settling the delivery failed; it will be redelivered")
	}
}

// settleAfter hands the delivery back to be delivered again after d: a
// turn waiting for its session's earlier one holds no slot meanwhile.
func (w *Worker) settleAfter(msg delivery, log zerolog.Logger, d time.Duration) {
	if err := msg.NakWithDelay(d); err != nil {
		log.Warn().Err(err).Msg("handing the delivery back failed; it will be redelivered")
	}
}

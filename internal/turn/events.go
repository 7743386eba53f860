package turn

import (
	"regexp"
	"time"

	"github.com/turnstream/turnstream/pkg/wire"
)

// Payload is a SessionEvent payload: counts, enums, durations and coarse
// reasons only.
type Payload = map[string]any

var tokenValue = regexp.MustCompile(`^[A-Za-z0-9_.:/@+-]{1,64}$`)

// token passes an identifier-like value (a provider or model name, a raw
// finish reason, a request id) into a payload only if it looks like one, so
// a provider cannot smuggle content into an event through such a field.
func token(s string) string {
	if s == "" || tokenValue.MatchString(s) {
		return s
	}
	return "invalid"
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

// event builds an event of the turn.
func (r *run) event(typ string, step, attempt int, p Payload) *wire.SessionEvent {
	return &wire.SessionEvent{
		Type:      typ,
		SessionID: r.req.SessionID,
		TurnID:    r.req.TurnID,
		Step:      step,
		Attempt:   attempt,
		Time:      r.loop.now(),
		Payload:   p,
	}
}

// emit publishes an event asynchronously. A failure is not this caller's
// to handle: the writer keeps it (bus.TurnWriter), and its next Flush and
// its Terminal return it, so the step or the turn's end fails the
// delivery, which a redelivery resumes. It is logged here to say which
// event it was.
func (r *run) emit(typ string, step, attempt int, p Payload) {
	if err := r.w.Event(r.event(typ, step, attempt, p)); err != nil {
		r.log.Warn().Err(err).Str("event", typ).Msg("event publish failed; the delivery fails at the writer's next flush")
	}
}

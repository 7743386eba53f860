package turn

import (
	"regexp"
	"time"

	"github.com/turnstream/turnstream/pkg/wire"
)

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
func (r *run) event(step, attempt int, p wire.EventPayload) *wire.SessionEvent {
	ev := wire.NewEvent(r.req.SessionID, r.req.TurnID, step, attempt, r.loop.now(), p)
	return &ev
}

// emit publishes an event asynchronously. A failure is not this caller's
// to handle: the writer keeps it (bus.TurnWriter), and its next Flush and
// its Terminal return it, so the step or the turn's end fails the
// delivery, which a redelivery resumes. It is logged here to say which
// event it was.
func (r *run) emit(step, attempt int, p wire.EventPayload) {
	if err := r.w.Event(r.event(step, attempt, p)); err != nil {
		r.log.Warn().Err(err).Str("event", p.EventType()).Msg("event publish failed; the delivery fails at the writer's next flush")
	}
}

package bus

import "github.com/nats-io/nats.go"

// Outstanding is how many publishes of nc await their ack (0 when nc has
// no ack tracker).
func Outstanding(nc *nats.Conn) int {
	trackers.Lock()
	t := trackers.m[nc]
	trackers.Unlock()
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pending)
}

// Tracked reports whether nc has an ack tracker.
func Tracked(nc *nats.Conn) bool {
	trackers.Lock()
	defer trackers.Unlock()
	return trackers.m[nc] != nil
}

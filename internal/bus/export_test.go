package bus

// Outstanding is how many publishes of b await their ack.
func Outstanding(b *Bus) int {
	b.acks.mu.Lock()
	defer b.acks.mu.Unlock()
	return len(b.acks.pending)
}

// AcksEnded reports whether b's ack tracker ended (its connection closed).
func AcksEnded(b *Bus) bool {
	b.acks.mu.Lock()
	defer b.acks.mu.Unlock()
	return b.acks.err != nil
}

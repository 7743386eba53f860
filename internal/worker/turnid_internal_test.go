package worker

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestDerivedTurnIDStable: every delivery of a stored request derives the
// same turn id; the same sequence in a recreated stream (another store
// time) derives another.
func TestDerivedTurnIDStable(t *testing.T) {
	at := time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)
	meta := func(seq uint64, stored time.Time, delivered uint64) *jetstream.MsgMetadata {
		return &jetstream.MsgMetadata{Sequence: jetstream.SequencePair{Stream: seq}, Timestamp: stored, NumDelivered: delivered}
	}
	first := derivedTurnID("", "s", meta(1, at, 1))
	if again := derivedTurnID("", "s", meta(1, at, 5)); again != first {
		t.Errorf("derivedTurnID() on redelivery = %q; want %q", again, first)
	}
	if other := derivedTurnID("", "s", meta(1, at.Add(time.Hour), 1)); other == first {
		t.Errorf("derivedTurnID() of sequence 1 of a recreated stream = %q; want another id than %q", other, first)
	}
	for _, tt := range []struct{ msgID, want string }{
		{"s/t9", "t9"},
		{"other/t9", "other/t9"}, // another session's: invalid, rejected
		{"abc", "abc"},
	} {
		if got := derivedTurnID(tt.msgID, "s", meta(1, at, 1)); got != tt.want {
			t.Errorf("derivedTurnID(%q) = %q; want %q", tt.msgID, got, tt.want)
		}
	}
}

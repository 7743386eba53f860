package toolworker

import (
	"testing"
	"time"
)

func TestJudge(t *testing.T) {
	tests := []struct {
		name       string
		seen       seen
		idempotent bool
		want       verdict
	}{
		{"no claim yet", seenNothing, false, verdictClaim},
		{"claim won", seenHeld, false, verdictRun},
		{"taken over to run again", seenHeld, true, verdictRun},
		{"done", seenDone, false, verdictAnswer},
		{"done, idempotent", seenDone, true, verdictAnswer},
		{"running", seenRunning, false, verdictWatch},
		{"running, idempotent", seenRunning, true, verdictWatch},
		{"holder alive", seenAlive, false, verdictLeave},
		{"holder alive, idempotent", seenAlive, true, verdictLeave},
		{"holder dead", seenStale, false, verdictUnknown},
		{"holder dead, idempotent", seenStale, true, verdictRerun},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := judge(tt.seen, tt.idempotent); got != tt.want {
				t.Errorf("judge(%v, %v) = %v; want %v", tt.seen, tt.idempotent, got, tt.want)
			}
		})
	}
	if got := cutShort(true); got != verdictLeave {
		t.Errorf("cutShort(true) = %v; want %v", got, verdictLeave)
	}
	if got := cutShort(false); got != verdictUnknown {
		t.Errorf("cutShort(false) = %v; want %v", got, verdictUnknown)
	}
}

func TestSeenOf(t *testing.T) {
	tests := []struct {
		name string
		f    *found
		want seen
	}{
		{"none", nil, seenNothing},
		{"running", &found{rec: claimRecord{State: claimRunning}}, seenRunning},
		{"done", &found{rec: claimRecord{State: claimDone, Result: &claimResult{}}}, seenDone},
	}
	for _, tt := range tests {
		if got := seenOf(tt.f); got != tt.want {
			t.Errorf("seenOf(%s) = %v; want %v", tt.name, got, tt.want)
		}
	}
}

func TestHeartbeatInterval(t *testing.T) {
	tests := []struct {
		ackWait, remaining, want time.Duration
	}{
		{5 * time.Second, time.Minute, 5 * time.Second / 3},
		{time.Second, time.Minute, time.Second / 3},
		{30 * time.Second, 8 * time.Second, 2 * time.Second}, // a quarter of the time left
		{5 * time.Second, 0, minHeartbeat},
		{5 * time.Second, -time.Second, minHeartbeat},
	}
	for _, tt := range tests {
		if got := heartbeatInterval(tt.ackWait, tt.remaining); got != tt.want {
			t.Errorf("heartbeatInterval(%s, %s) = %s; want %s", tt.ackWait, tt.remaining, got, tt.want)
		}
	}
}

func TestWatchWindow(t *testing.T) {
	tests := []struct {
		holder, own, remaining, want time.Duration
	}{
		{time.Second, 2 * time.Second, time.Minute, 2500 * time.Millisecond}, // the holder's pace
		{0, 2 * time.Second, time.Minute, 5 * time.Second},                   // none recorded: its own
		{time.Second, time.Second, time.Second, time.Second},                 // no later than the deadline
		{time.Second, time.Second, -time.Second, 0},                          // past it
		{time.Hour, time.Second, 24 * time.Hour, maxWatch},                   // bounded
		{-time.Second, time.Second, time.Minute, 2500 * time.Millisecond},    // nonsense recorded
	}
	for _, tt := range tests {
		if got := watchWindow(tt.holder, tt.own, tt.remaining); got != tt.want {
			t.Errorf("watchWindow(%s, %s, %s) = %s; want %s", tt.holder, tt.own, tt.remaining, got, tt.want)
		}
	}
}

func TestDecodeClaim(t *testing.T) {
	rec := claimRecord{
		State: claimDone, Owner: "o", StreamSeq: 7, Delivery: 2, Attempt: 2, HeartbeatMS: 333, Beat: 4,
		Result: &claimResult{Content: "<é>", IsError: true, Synthesized: true},
	}
	data, err := encodeClaim(rec)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := decodeClaim(data)
	if !ok || !got.sameHolder(rec) || got.State != claimDone || *got.Result != *rec.Result || got.heartbeat() != 333*time.Millisecond {
		t.Errorf("decodeClaim(encodeClaim(%+v)) = %+v, %v; want it back", rec, got, ok)
	}
	for _, bad := range []string{``, `{`, `{"state":"odd"}`, `{"state":"done"}`, `[]`} {
		if got, ok := decodeClaim([]byte(bad)); ok || got.State != claimRunning {
			t.Errorf("decodeClaim(%q) = %+v, %v; want a running claim of unknown holder, false", bad, got, ok)
		}
	}
}

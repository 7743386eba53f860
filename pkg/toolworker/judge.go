package toolworker

import "time"

// seen is what a delivery knows of its call's claim.
type seen int

const (
	// seenNothing: not read yet, or gone (released) since it was read.
	seenNothing seen = iota
	// seenHeld: the delivery holds the claim (created it, or took it over
	// to run the call again).
	seenHeld
	// seenDone: the claim holds the call's result.
	seenDone
	// seenRunning: another delivery holds the claim; not watched yet.
	seenRunning
	// seenAlive: another delivery holds the claim, and it moved while
	// watched: its holder is renewing it.
	seenAlive
	// seenStale: another delivery holds the claim, and it did not move
	// for 2.5 of its holder's heartbeats: the holder died or is stopped.
	seenStale
)

// verdict is what a delivery does next with its call.
type verdict int

const (
	// verdictClaim: create the claim, or read the one there is.
	verdictClaim verdict = iota
	// verdictRun: run the handler while renewing the held claim, record
	// the result in it, publish the result, ack.
	verdictRun
	// verdictAnswer: publish the claim's recorded result, ack.
	verdictAnswer
	// verdictWatch: watch the claim's revision for 2.5 of its holder's
	// heartbeats, keeping the delivery in progress meanwhile.
	verdictWatch
	// verdictLeave: hand the delivery back (after a delay): the holder
	// will answer, or die and leave a stale claim to a later delivery.
	verdictLeave
	// verdictRerun: take the stale claim over and run the call again.
	verdictRerun
	// verdictUnknown: take the stale claim over, marking it done with the
	// "tool outcome unknown" result, which is then answered.
	verdictUnknown
)

// judge decides the next step of a delivery from what it has seen of the
// claim. Only an idempotent tool's call runs again after its holder died.
func judge(s seen, idempotent bool) verdict {
	switch s {
	case seenHeld:
		return verdictRun
	case seenDone:
		return verdictAnswer
	case seenRunning:
		return verdictWatch
	case seenAlive:
		return verdictLeave
	case seenStale:
		if idempotent {
			return verdictRerun
		}
		return verdictUnknown
	}
	return verdictClaim
}

// seenOf is what a claim read from the bucket is to a delivery that does
// not hold it.
func seenOf(f *found) seen {
	switch {
	case f == nil:
		return seenNothing
	case f.rec.State == claimDone:
		return seenDone
	}
	return seenRunning
}

// cutShort decides for a call whose handler Serve's drain timeout
// cancelled: its effect is unknown. An idempotent tool's call is handed
// back (its claim released) to run again; any other is answered with the
// "tool outcome unknown" result.
func cutShort(idempotent bool) verdict {
	if idempotent {
		return verdictLeave
	}
	return verdictUnknown
}

const (
	// minHeartbeat bounds how often a delivery sends in-progress acks,
	// renews its claim or reads another's.
	minHeartbeat = 10 * time.Millisecond
	// maxWatch bounds how long a delivery watches another's claim, whatever
	// heartbeat interval the claim records.
	maxWatch = 10 * time.Minute
)

// heartbeatInterval is how often a delivery acks progress and renews its
// claim: a third of the consumer's AckWait, so two beats can be lost before
// the server redelivers, and at most a quarter of the time left before the
// call's deadline, so that a delivery that finds the claim can judge its
// holder well before the deadline.
func heartbeatInterval(ackWait, remaining time.Duration) time.Duration {
	return max(min(ackWait/3, remaining/4), minHeartbeat)
}

// watchWindow is how long a delivery watches a claim held by another before
// it judges the holder dead: 2.5 of the holder's recorded heartbeat
// intervals (its own, if the claim records none), so that a live holder
// renews it at least twice in the window even with one slow round trip; at
// most until the call's deadline (remaining) and maxWatch.
func watchWindow(holderHeartbeat, own, remaining time.Duration) time.Duration {
	hb := holderHeartbeat
	if hb <= 0 {
		hb = own
	}
	return max(min(hb*5/2, remaining, maxWatch), 0)
}

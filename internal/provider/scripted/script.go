package scripted

import (
	"fmt"
	"slices"
	"time"

	"github.com/turnstream/turnstream/internal/provider"
)

// Script is the provider calls of a recorded turn, in the order they were
// made: one per attempt, ordered by step, then by attempt.
type Script struct {
	Calls []Call
}

// Call is one recorded attempt, replayed as one provider call.
type Call struct {
	// Step is the turn-loop step and Attempt the attempt within it (1-based
	// across the whole step: retries and fallbacks continue the count).
	Step    int
	Attempt int
	// Target is the provider and model the attempt went to.
	Target provider.Target
	// Frames are the attempt's frames in sequence order, as recorded: Raw
	// and Event as the provider sent them (its raw frames), Delta the
	// normalized delta the recording worker computed (the frame's chunk;
	// nil when the record has none).
	Frames []provider.Frame
	// Outcome is how the call ends after its frames.
	Outcome Outcome
	// Marker is the recorded end marker (completed, retrying, failed), ""
	// when an Override supplied the outcome.
	Marker string
}

// Steps lists the steps that made provider calls, in order.
func (s *Script) Steps() []int {
	var out []int
	for _, c := range s.Calls {
		if n := len(out); n == 0 || out[n-1] != c.Step {
			out = append(out, c.Step)
		}
	}
	return out
}

// Chain lists the targets step called, in the order it first called them:
// the part of its route's chain that was tried (skipped targets made no
// call and are not in the log).
func (s *Script) Chain(step int) []provider.Target {
	var out []provider.Target
	for _, c := range s.Calls {
		if c.Step == step && !slices.Contains(out, c.Target) {
			out = append(out, c.Target)
		}
	}
	return out
}

// Kind is how a scripted call ends.
type Kind uint8

// Outcome kinds.
const (
	// KindComplete: the frames must reach the stream's terminal marker; the
	// call returns the finalized response.
	KindComplete Kind = iota + 1
	// KindFail: the call fails with a *provider.Failure of Outcome.Class.
	KindFail
	// KindHang: the call blocks until its context is done.
	KindHang
)

func (k Kind) String() string {
	switch k {
	case KindComplete:
		return "complete"
	case KindFail:
		return "fail"
	case KindHang:
		return "hang"
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Outcome is how a scripted call ends, after its frames are replayed.
type Outcome struct {
	Kind Kind
	// Class is the failure class of a KindFail outcome; Status, RetryAfter
	// and RequestID the rest of its recorded snapshot.
	Class      provider.Class
	Status     int
	RetryAfter time.Duration
	RequestID  string
}

// Complete is the outcome of a call that completes.
func Complete() Outcome { return Outcome{Kind: KindComplete} }

// Fail is the outcome of a call that fails with class c.
func Fail(c provider.Class) Outcome { return Outcome{Kind: KindFail, Class: c} }

// Hang is the outcome of a call that hangs until its context is done (so
// forever under a context that never is).
func Hang() Outcome { return Outcome{Kind: KindHang} }

func (o Outcome) String() string {
	if o.Kind == KindFail {
		return "fail " + string(o.Class)
	}
	return o.Kind.String()
}

func (o Outcome) validate() error {
	switch o.Kind {
	case KindComplete, KindHang:
		if o.Class != "" {
			return fmt.Errorf("outcome %s has a failure class", o.Kind)
		}
	case KindFail:
		if o.Class == "" {
			return fmt.Errorf("outcome fail has no failure class")
		}
	default:
		return fmt.Errorf("no outcome")
	}
	return nil
}

// Override is a sidecar record of how an attempt without an end marker
// ended: a thrown stream (Fail with the class it should be replayed as) or
// a hang (Hang). The successful event log alone cannot tell.
type Override struct {
	Step    int
	Attempt int
	Outcome Outcome
}

package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/turnstream/turnstream/internal/assemble"
)

// EventKind is what an executor Event reports.
type EventKind uint8

// Executor event kinds.
const (
	// EventRequest: an attempt is about to be sent.
	EventRequest EventKind = iota + 1
	// EventFinish: an attempt ended (Failure nil on success).
	EventFinish
	// EventRetry: a retry is scheduled after Delay (before the wait).
	EventRetry
	// EventRetryStarted: the wait is over and the retry is sent next.
	EventRetryStarted
	// EventFallback: the chain moves from Target to Next.
	EventFallback
)

// Event reports one executor decision to the observer.
type Event struct {
	Kind    EventKind
	Attempt int // 1-based across the whole step
	Target  Target
	Next    Target // EventFallback only
	// Failure is the attempt's failure (EventFinish, EventRetry, EventFallback).
	Failure *Failure
	// Retry is the retry number on this target (EventRetry, EventRetryStarted).
	Retry    int
	Delay    time.Duration
	Duration time.Duration // EventFinish only
	// Skipped is the coarse reason a target was skipped (EventFallback).
	Skipped string
	// Marker is how the attempt's chunks end (EventFinish only): completed,
	// retrying or failed.
	Marker string
	// FinishReason of a successful attempt (EventFinish only).
	FinishReason string
}

// Observer receives frames and decisions of one execution.
type Observer interface {
	// Frame relays a frame of attempt as it arrives.
	Frame(attempt int, target Target, f Frame) error
	// Event reports a decision.
	Event(ev Event)
}

// Attempt is the metadata of one attempt, kept in the Result.
type Attempt struct {
	Number    int
	Target    Target
	Class     Class // empty on success
	Status    int
	RequestID string
	Duration  time.Duration
}

// Result is one finalized provider execution.
type Result struct {
	Response *assemble.Response
	// Target served the response.
	Target   Target
	Attempts []Attempt
}

// Binding is one target with the adapter that serves it.
type Binding struct {
	Target  Target
	Adapter Adapter
	Retry   RetryPolicy
}

// Clock waits; tests inject a fake.
type Clock interface {
	Now() time.Time
	// Sleep waits d or until ctx is done.
	Sleep(ctx context.Context, d time.Duration) error
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }
func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Executor runs a request along a chain of targets.
type Executor struct {
	// Clock defaults to the wall clock.
	Clock Clock
	// Rand returns a float in [0,1) for jitter; default math/rand.
	Rand func() float64
}

// Execute runs req on chain[0], retrying per its policy, then falls back
// along the chain. It returns the first successful result, or the last
// attempt's *Failure when every target failed.
func (e *Executor) Execute(ctx context.Context, chain []Binding, req *Request, obs Observer) (*Result, error) {
	clock := e.Clock
	if clock == nil {
		clock = realClock{}
	}
	if len(chain) == 0 {
		return nil, Fail(ClassNoRoute, "route has no targets", nil)
	}
	res := &Result{}
	attempt := 0
	var last *Failure
	for i, b := range chain {
		body, err := b.Adapter.Prepare(req, b.Target.Model)
		if err != nil {
			last = AsFailure(err)
			e.fallback(obs, chain, i, attempt, last)
			continue
		}
		for retry := 0; ; retry++ {
			attempt++
			obs.Event(Event{Kind: EventRequest, Attempt: attempt, Target: b.Target})
			start := clock.Now()
			n := attempt
			resp, err := b.Adapter.Stream(ctx, body, func(f Frame) error { return obs.Frame(n, b.Target, f) })
			took := clock.Now().Sub(start)
			if err == nil {
				res.Attempts = append(res.Attempts, Attempt{Number: attempt, Target: b.Target, Duration: took})
				obs.Event(Event{Kind: EventFinish, Attempt: attempt, Target: b.Target, Duration: took, Marker: "completed", FinishReason: resp.FinishReason})
				res.Response, res.Target = resp, b.Target
				return res, nil
			}
			f := AsFailure(err)
			if ctx.Err() != nil {
				f = AsFailure(ctx.Err())
			}
			last = f
			res.Attempts = append(res.Attempts, Attempt{Number: attempt, Target: b.Target, Class: f.Class, Status: f.Status, RequestID: f.RequestID, Duration: took})
			delay, canRetry := time.Duration(0), false
			if f.Class != ClassCancelled && b.Retry.Retryable(f.Class) && (b.Retry.withDefaults().Mode == RetryAlways || retry < b.Retry.withDefaults().MaxRetries) {
				delay, canRetry = b.Retry.Delay(retry+1, f.RetryAfter, e.Rand)
			}
			marker := "failed"
			if canRetry {
				marker = "retrying"
			}
			obs.Event(Event{Kind: EventFinish, Attempt: attempt, Target: b.Target, Failure: f, Duration: took, Marker: marker})
			if f.Class == ClassCancelled {
				return res, f
			}
			if !canRetry {
				break
			}
			obs.Event(Event{Kind: EventRetry, Attempt: attempt, Target: b.Target, Failure: f, Retry: retry + 1, Delay: delay})
			if err := clock.Sleep(ctx, delay); err != nil {
				return res, AsFailure(err)
			}
			obs.Event(Event{Kind: EventRetryStarted, Attempt: attempt, Target: b.Target, Retry: retry + 1, Delay: delay})
		}
		e.fallback(obs, chain, i, attempt, last)
	}
	return res, last
}

func (e *Executor) fallback(obs Observer, chain []Binding, i, attempt int, f *Failure) {
	if i+1 >= len(chain) {
		return
	}
	obs.Event(Event{Kind: EventFallback, Attempt: attempt, Target: chain[i].Target, Next: chain[i+1].Target, Failure: f})
}

// String names an event kind for logs.
func (k EventKind) String() string {
	switch k {
	case EventRequest:
		return "request"
	case EventFinish:
		return "finish"
	case EventRetry:
		return "retry"
	case EventRetryStarted:
		return "retry-started"
	case EventFallback:
		return "fallback"
	}
	return fmt.Sprintf("event(%d)", k)
}

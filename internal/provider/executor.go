package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/pkg/wire"
)

// EventKind is what an executor Event reports.
type EventKind uint8

// Executor event kinds.
const (
	// EventRequest: an attempt is about to be sent.
	EventRequest EventKind = iota + 1
	// EventFinish: an attempt ended (Failure nil on success).
	EventFinish
	// EventRetry: a retry is scheduled after Delay, reported before the
	// cancellable wait.
	EventRetry
	// EventRetryStarted: the wait is over; the retry is sent next.
	EventRetryStarted
	// EventFallback: the chain moves from Target to Next, because Target
	// failed (Failure) or could not serve the request (Skipped).
	EventFallback
)

// Event reports one executor decision to the observer.
type Event struct {
	Kind    EventKind
	Attempt int // 1-based across the whole step; 0 for a skipped target
	Target  Target
	Next    Target // EventFallback only
	// Failure is the attempt's failure (EventFinish, EventRetry, EventFallback).
	Failure *Failure
	// Policy names the retry policy (EventRetry).
	Policy string
	// Retry is the retry number on this target (EventRetry, EventRetryStarted).
	Retry    int
	Delay    time.Duration
	Duration time.Duration // EventFinish only
	// Skipped is the coarse reason Target could not serve the request
	// (EventFallback), one of the Skip constants.
	Skipped string
	// Marker is how the attempt's chunks end (EventFinish only).
	Marker string
	// FinishReason and Usage of a successful attempt (EventFinish only).
	FinishReason string
	Usage        *wire.Usage
}

// Observer receives frames and decisions of one execution.
type Observer interface {
	// Frame relays a frame of attempt as it arrives. An error aborts the
	// execution (ErrRelay): it is not the provider's failure. The exception
	// is a frame too large to relay (its record does not fit): an error
	// wrapping a RESPONSE_TOO_LARGE *Failure (TooLarge(LimitFrameBytes))
	// fails the attempt like any other limit, so the chain falls back
	// instead of the execution ending as a relay failure.
	Frame(attempt int, target Target, f Frame) error
	// Event reports a decision.
	Event(ev Event)
}

// ErrRelay wraps an observer's Frame error: the execution stopped because
// its output could not be relayed, not because the provider failed, so it
// is neither retried nor a reason to fall back.
var ErrRelay = errors.New("provider: relaying a frame failed")

type relayError struct{ err error }

func (e *relayError) Error() string   { return ErrRelay.Error() + ": " + e.err.Error() }
func (e *relayError) Unwrap() []error { return []error{ErrRelay, e.err} }

// Attempt is the metadata of one attempt, kept in the Result.
type Attempt struct {
	Number    int
	Target    Target
	Class     Class // empty on success
	Status    int
	RequestID string
	Duration  time.Duration
}

// Skip is a target that could not serve the request.
type Skip struct {
	Target Target
	Reason string
}

// Result is one finalized provider execution, or what was tried before it
// failed.
type Result struct {
	Response *assemble.Response
	// Target served the response.
	Target Target
	// API is the wire API of the target that served, and Model the model
	// (with its capabilities) the call was prepared for.
	API   string
	Model Model
	// Replay is how history is replayed to API: whether and how the
	// response's echo is kept.
	Replay   Replay
	Attempts []Attempt
	Skipped  []Skip
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

// Executor runs a request along a chain of targets resolved through its
// registry: the ProviderExecutor.
type Executor struct {
	Registry *Registry
	// Clock defaults to the wall clock.
	Clock Clock
	// Limits bound every attempt; zero fields take the DefaultLimits
	// values. The executor counts the frames relayed and checks each one's
	// size; adapters enforce the rest, reading them with LimitsOf.
	Limits Limits
}

func (e *Executor) clock() Clock {
	if e.Clock == nil {
		return realClock{}
	}
	return e.Clock
}

// Execute runs req on each target of chain in order: a target that cannot
// serve it is skipped with a recorded reason; a prepared call is retried on
// its target per its policy; a failure after retries, or an incomplete
// response, moves to the next target (an answer over the attempt's Limits,
// RESPONSE_TOO_LARGE, is never retried on its target and falls back like a
// malformed one). It returns the first successful result. Otherwise every
// failure (selection, dispatch or streaming) ends as one *Failure
// (LLM-FAILURE-BOUNDARY), returned with the metadata of what was tried. An incomplete response is returned beside its failure when no
// later target succeeded.
func (e *Executor) Execute(ctx context.Context, chain []Target, req *Request, obs Observer) (*Result, error) {
	res := &Result{}
	if len(chain) == 0 {
		return res, Fail(ClassNoRoute, "route has no targets", nil)
	}
	if e.Registry == nil {
		return res, Fail(ClassNoRoute, "no registry", nil)
	}
	attempt := 0
	var last, incomplete *Failure
	for i, target := range chain {
		pc, err := e.Registry.Prepare(target, req)
		if err != nil {
			last = AsFailure(err)
			res.Skipped = append(res.Skipped, Skip{Target: target, Reason: last.Reason})
			e.fallback(obs, chain, i, attempt, last, last.Reason)
			continue
		}
		resp, err := e.Dispatch(ctx, pc, &attempt, res, obs)
		if err == nil && resp.FinishReason != wire.FinishIncomplete {
			res.Response, res.Target, res.API, res.Replay, res.Model = resp, target, pc.API(), pc.Replay(), pc.Model()
			return res, nil
		}
		if err == nil {
			// Incomplete counts only if no later target does better.
			res.Response, res.Target, res.API, res.Replay, res.Model = resp, target, pc.API(), pc.Replay(), pc.Model()
			incomplete = Fail(ClassIncomplete, "incomplete response", nil)
			err = incomplete
		}
		if errors.Is(err, ErrRelay) {
			return res, err
		}
		last = AsFailure(err)
		if ctx.Err() != nil || last.Class == ClassCancelled || last.Class == ClassInvalidCall || last.Class == ClassCursorLost {
			return res, last
		}
		e.fallback(obs, chain, i, attempt, last, "")
	}
	if res.Response != nil {
		return res, incomplete // the response beside its own failure, not a later target's
	}
	return res, last
}

// Dispatch runs a prepared call's attempts, retrying within the same step
// per the policy it captured, and numbering attempts from *attempt. The
// same body is sent by every attempt (LLM-RETRY-WIRE-TEST). A second
// Dispatch of the same call is INVALID_PREPARED_CALL.
func (e *Executor) Dispatch(ctx context.Context, pc *PreparedCall, attempt *int, res *Result, obs Observer) (*assemble.Response, error) {
	if err := pc.claim(); err != nil {
		return nil, err
	}
	clock := e.clock()
	policy := pc.Retry()
	bo := policy.NewBackOff()
	target := pc.Target()
	limits := e.Limits.WithDefaults()
	actx := WithLimits(ctx, limits)
	for retry := 1; ; retry++ {
		*attempt++
		n := *attempt
		obs.Event(Event{Kind: EventRequest, Attempt: n, Target: target})
		start := clock.Now()
		chunks := 0
		resp, err := pc.attempt(actx, func(f Frame) error {
			if chunks++; chunks > limits.MaxChunks {
				return TooLarge(LimitChunks)
			}
			if len(f.Raw) > limits.MaxEventBytes {
				return TooLarge(LimitEventBytes)
			}
			if err := obs.Frame(n, target, f); err != nil {
				if tl := tooLarge(err); tl != nil {
					return tl
				}
				return &relayError{err: err}
			}
			return nil
		})
		took := clock.Now().Sub(start)
		if err == nil {
			res.Attempts = append(res.Attempts, Attempt{Number: n, Target: target, Duration: took})
			ev := Event{Kind: EventFinish, Attempt: n, Target: target, Duration: took, Marker: wire.MarkerCompleted, FinishReason: resp.FinishReason, Usage: resp.Usage}
			if resp.FinishReason == wire.FinishIncomplete {
				// It does not count unless nothing better comes: its chunks
				// end as failed, so a UI drops its text.
				ev.Marker, ev.Failure = wire.MarkerFailed, Fail(ClassIncomplete, "incomplete response", nil)
			}
			obs.Event(ev)
			return resp, nil
		}
		var relay *relayError
		if errors.As(err, &relay) {
			obs.Event(Event{Kind: EventFinish, Attempt: n, Target: target, Duration: took, Marker: wire.MarkerFailed,
				Failure: Fail(ClassTransport, "relay failed", nil)})
			return nil, relay
		}
		f := AsFailure(err)
		if ctxErr := ctx.Err(); ctxErr != nil {
			f = AsFailure(ctxErr)
		}
		res.Attempts = append(res.Attempts, Attempt{Number: n, Target: target, Class: f.Class, Status: f.Status, RequestID: f.RequestID, Duration: took})
		delay, again := time.Duration(0), false
		if ctx.Err() == nil {
			delay, again = policy.Next(bo, f, retry)
		}
		marker := wire.MarkerFailed
		if again {
			marker = wire.MarkerRetrying
		}
		obs.Event(Event{Kind: EventFinish, Attempt: n, Target: target, Failure: f, Duration: took, Marker: marker})
		if !again {
			return nil, f
		}
		obs.Event(Event{Kind: EventRetry, Attempt: n, Target: target, Failure: f, Policy: policy.Key(), Retry: retry, Delay: delay})
		if err := clock.Sleep(ctx, delay); err != nil {
			return nil, AsFailure(err)
		}
		obs.Event(Event{Kind: EventRetryStarted, Attempt: n, Target: target, Policy: policy.Key(), Retry: retry, Delay: delay})
	}
}

// tooLarge returns the RESPONSE_TOO_LARGE failure err wraps, or nil.
func tooLarge(err error) *Failure {
	var f *Failure
	if errors.As(err, &f) && f.Class == ClassResponseTooLarge {
		return f
	}
	return nil
}

func (e *Executor) fallback(obs Observer, chain []Target, i, attempt int, f *Failure, skipped string) {
	if i+1 >= len(chain) {
		return
	}
	obs.Event(Event{Kind: EventFallback, Attempt: attempt, Target: chain[i], Next: chain[i+1], Failure: f, Skipped: skipped})
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

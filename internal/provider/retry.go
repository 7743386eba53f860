package provider

import (
	"time"

	"github.com/cenkalti/backoff/v4"
)

// RetryMode selects which failures are retried.
type RetryMode string

// Retry modes (LLM-RETRY-POLICY).
const (
	// RetryNormal retries EMPTY_RESPONSE, RATE_LIMIT, SERVER, TIMEOUT and
	// TRANSPORT at most MaxRetries times.
	RetryNormal RetryMode = "normal"
	// RetryAlways retries every request failure without a count limit,
	// until success or cancellation; never a lost cursor or an answer over
	// the attempt's limits (RESPONSE_TOO_LARGE).
	RetryAlways RetryMode = "always"
	// RetryNever does not retry.
	RetryNever RetryMode = "never"
)

// RetryPolicy decides whether and when a failed attempt is retried on the
// same target. Zero fields take the DefaultRetryPolicy values; a negative
// MaxRetries means none and a negative Jitter none.
type RetryPolicy struct {
	// Mode defaults to RetryNormal.
	Mode RetryMode
	// MaxRetries caps retries per target in normal mode. Default 2.
	MaxRetries int
	// Initial is the first delay. Default 500ms.
	Initial time.Duration
	// Max caps the computed delay and any provider hint honoured. Default 10s.
	Max time.Duration
	// Jitter is the symmetric random fraction applied to computed delays.
	// Default 0.1.
	Jitter float64
}

// DefaultRetryPolicy is the normal policy.
var DefaultRetryPolicy = RetryPolicy{Mode: RetryNormal, MaxRetries: 2, Initial: 500 * time.Millisecond, Max: 10 * time.Second, Jitter: 0.1}

func (p RetryPolicy) withDefaults() RetryPolicy {
	d := DefaultRetryPolicy
	if p.Mode == "" {
		p.Mode = d.Mode
	}
	// A negative MaxRetries or Jitter stays negative (none), so that
	// applying the defaults again changes nothing.
	if p.MaxRetries == 0 {
		p.MaxRetries = d.MaxRetries
	}
	if p.Initial <= 0 {
		p.Initial = d.Initial
	}
	if p.Max <= 0 {
		p.Max = d.Max
	}
	p.Initial = min(p.Initial, p.Max) // Max caps the first delay too
	if p.Jitter == 0 {
		p.Jitter = d.Jitter
	}
	return p
}

// Key names the policy in llm/retry events.
func (p RetryPolicy) Key() string { return string(p.withDefaults().Mode) }

// Retryable reports whether class is retried by the policy's mode. Only
// request failures are: cancellation, a missing route, a deprecated
// provider, an invalid prepared call, a lost cursor or an answer over the
// attempt's limits (RESPONSE_TOO_LARGE) never are.
func (p RetryPolicy) Retryable(c Class) bool {
	switch p.withDefaults().Mode {
	case RetryNever:
		return false
	case RetryAlways:
		switch c {
		case ClassCancelled, ClassNoRoute, ClassDeprecated, ClassInvalidCall, ClassUnsupported, ClassCursorLost, ClassResponseTooLarge:
			return false
		}
		return true
	}
	switch c {
	case ClassEmpty, ClassRateLimit, ClassServer, ClassTimeout, ClassTransport:
		return true
	}
	return false
}

// NewBackOff returns the delays of one target's retries: exponential from
// Initial, doubling, capped at Max, with symmetric Jitter (backoff/v4).
func (p RetryPolicy) NewBackOff() backoff.BackOff {
	p = p.withDefaults()
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = p.Initial
	b.Multiplier = 2
	b.MaxInterval = p.Max
	b.RandomizationFactor = max(p.Jitter, 0)
	b.MaxElapsedTime = 0 // never give up on elapsed time: the mode decides
	b.Reset()
	return b
}

// Next decides the retry after failure f, the retries-th on this target
// (from 1): whether to retry and how long to wait first. A provider hint is
// honoured as the delay when it does not exceed Max; a hint beyond Max is
// not waited for, so the chain moves to the next target instead.
func (p RetryPolicy) Next(bo backoff.BackOff, f *Failure, retries int) (time.Duration, bool) {
	p = p.withDefaults()
	if !p.Retryable(f.Class) || p.Mode != RetryAlways && retries > p.MaxRetries { // an unknown mode counts like normal
		return 0, false
	}
	computed := bo.NextBackOff()
	if computed == backoff.Stop {
		return 0, false
	}
	if f.RetryAfter > 0 {
		if f.RetryAfter > p.Max {
			return 0, false
		}
		return f.RetryAfter, true
	}
	return computed, true
}

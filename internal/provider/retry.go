package provider

import (
	"math/rand/v2"
	"time"
)

// RetryMode selects which failures are retried.
type RetryMode string

// Retry modes.
const (
	// RetryNormal retries EMPTY_RESPONSE, RATE_LIMIT, SERVER, TIMEOUT and
	// TRANSPORT at most MaxRetries times.
	RetryNormal RetryMode = "normal"
	// RetryAlways retries every failure but cancellation, without a count
	// limit, until success or cancellation.
	RetryAlways RetryMode = "always"
	// RetryNever does not retry.
	RetryNever RetryMode = "never"
)

// RetryPolicy decides whether and when a failed attempt is retried on the
// same target. Zero fields take defaults.
type RetryPolicy struct {
	// Mode defaults to RetryNormal.
	Mode RetryMode
	// MaxRetries caps retries per target in normal mode. Default 2.
	MaxRetries int
	// Initial is the first delay. Default 500ms.
	Initial time.Duration
	// Max caps the delay, and any provider hint honoured. Default 10s.
	Max time.Duration
	// Jitter is the symmetric random fraction applied to computed delays.
	// Default 0.1.
	Jitter float64
}

// DefaultRetryPolicy is the normal policy with default values.
var DefaultRetryPolicy = RetryPolicy{Mode: RetryNormal, MaxRetries: 2, Initial: 500 * time.Millisecond, Max: 10 * time.Second, Jitter: 0.1}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Mode == "" {
		p.Mode = RetryNormal
	}
	if p.MaxRetries <= 0 && p.Mode == RetryNormal {
		p.MaxRetries = DefaultRetryPolicy.MaxRetries
	}
	if p.Initial <= 0 {
		p.Initial = DefaultRetryPolicy.Initial
	}
	if p.Max <= 0 {
		p.Max = DefaultRetryPolicy.Max
	}
	if p.Jitter <= 0 {
		p.Jitter = DefaultRetryPolicy.Jitter
	}
	return p
}

// Retryable reports whether class is retried by the policy's mode.
func (p RetryPolicy) Retryable(c Class) bool {
	switch p.withDefaults().Mode {
	case RetryNever:
		return false
	case RetryAlways:
		return c != ClassCancelled && c != ClassNoRoute && c != ClassDeprecated && c != ClassInvalidCall && c != ClassUnsupported
	}
	switch c {
	case ClassEmpty, ClassRateLimit, ClassServer, ClassTimeout, ClassTransport:
		return true
	}
	return false
}

// Delay returns the wait before retry number n (1-based) and whether the
// retry may happen at all: a provider hint beyond the cap is not waited for
// (the caller moves to the next target instead).
func (p RetryPolicy) Delay(n int, hint time.Duration, rnd func() float64) (time.Duration, bool) {
	p = p.withDefaults()
	if hint > 0 {
		if hint > p.Max {
			return 0, false
		}
		return hint, true
	}
	d := p.Initial
	for i := 1; i < n && d < p.Max; i++ {
		d *= 2
	}
	d = min(d, p.Max)
	if rnd == nil {
		rnd = rand.Float64
	}
	j := 1 + p.Jitter*(2*rnd()-1)
	return time.Duration(float64(d) * j), true
}

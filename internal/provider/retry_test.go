package provider_test

import (
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/provider"
)

var allClasses = []provider.Class{
	provider.ClassRateLimit, provider.ClassServer, provider.ClassTimeout, provider.ClassTransport,
	provider.ClassMalformed, provider.ClassStreamClosed, provider.ClassEmpty, provider.ClassAuth,
	provider.ClassQuota, provider.ClassPayment, provider.ClassTooLarge, provider.ClassInvalidRequest,
	provider.ClassProvider, provider.ClassCancelled, provider.ClassNoRoute, provider.ClassUnsupported,
	provider.ClassDeprecated, provider.ClassInvalidCall,
}

func TestRetryPolicyRetryable(t *testing.T) {
	normal := map[provider.Class]bool{
		provider.ClassEmpty: true, provider.ClassRateLimit: true, provider.ClassServer: true,
		provider.ClassTimeout: true, provider.ClassTransport: true,
	}
	always := map[provider.Class]bool{}
	for _, c := range allClasses {
		always[c] = true
	}
	for _, c := range []provider.Class{provider.ClassCancelled, provider.ClassNoRoute, provider.ClassDeprecated, provider.ClassInvalidCall, provider.ClassUnsupported} {
		always[c] = false
	}
	modes := []struct {
		name   string
		policy provider.RetryPolicy
		want   map[provider.Class]bool
	}{
		{"zero value is normal", provider.RetryPolicy{}, normal},
		{"normal", provider.RetryPolicy{Mode: provider.RetryNormal}, normal},
		{"always", provider.RetryPolicy{Mode: provider.RetryAlways}, always},
		{"never", provider.RetryPolicy{Mode: provider.RetryNever}, map[provider.Class]bool{}},
	}
	for _, m := range modes {
		for _, c := range allClasses {
			t.Run(m.name+"/"+string(c), func(t *testing.T) {
				if got := m.policy.Retryable(c); got != m.want[c] {
					t.Errorf("RetryPolicy{Mode: %q}.Retryable(%s) = %v; want %v", m.policy.Mode, c, got, m.want[c])
				}
			})
		}
	}
}

func TestRetryPolicyDelay(t *testing.T) {
	const (
		ms = time.Millisecond
		s  = time.Second
	)
	fixed := func(v float64) func() float64 { return func() float64 { return v } }
	tests := []struct {
		name   string
		policy provider.RetryPolicy
		n      int
		hint   time.Duration
		rnd    float64
		want   time.Duration
		ok     bool
	}{
		{"first, no jitter", provider.RetryPolicy{}, 1, 0, 0.5, 500 * ms, true},
		{"second doubles", provider.RetryPolicy{}, 2, 0, 0.5, 1 * s, true},
		{"third", provider.RetryPolicy{}, 3, 0, 0.5, 2 * s, true},
		{"fourth", provider.RetryPolicy{}, 4, 0, 0.5, 4 * s, true},
		{"fifth", provider.RetryPolicy{}, 5, 0, 0.5, 8 * s, true},
		{"sixth capped", provider.RetryPolicy{}, 6, 0, 0.5, 10 * s, true},
		{"far beyond, capped", provider.RetryPolicy{}, 60, 0, 0.5, 10 * s, true},
		{"jitter low", provider.RetryPolicy{}, 1, 0, 0, 450 * ms, true},
		{"jitter high", provider.RetryPolicy{}, 2, 0, 1, 1100 * ms, true},
		{"jitter on the cap", provider.RetryPolicy{}, 9, 0, 0, 9 * s, true},
		{"jitter quarter", provider.RetryPolicy{}, 3, 0, 0.25, 1900 * ms, true},
		{"custom initial and cap", provider.RetryPolicy{Initial: 100 * ms, Max: 300 * ms, Jitter: 0.5}, 3, 0, 1, 450 * ms, true},
		{"hint honoured", provider.RetryPolicy{}, 1, 1100 * ms, 0, 1100 * ms, true},
		{"hint has no jitter", provider.RetryPolicy{}, 2, 3 * s, 1, 3 * s, true},
		{"hint at the cap", provider.RetryPolicy{}, 1, 10 * s, 0.5, 10 * s, true},
		{"hint beyond the cap", provider.RetryPolicy{}, 1, 10*s + ms, 0.5, 0, false},
		{"hint beyond a custom cap", provider.RetryPolicy{Max: 2 * s}, 1, 3 * s, 0.5, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.policy.Delay(tt.n, tt.hint, fixed(tt.rnd))
			if got != tt.want || ok != tt.ok {
				t.Errorf("Delay(%d, %v, rnd=%v) = %v, %v; want %v, %v", tt.n, tt.hint, tt.rnd, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestRetryPolicyDelayJitterBounds: with the real random source every delay
// stays within ±10% of its base.
func TestRetryPolicyDelayJitterBounds(t *testing.T) {
	var p provider.RetryPolicy
	for n := 1; n <= 8; n++ {
		base := min(500*time.Millisecond<<(n-1), 10*time.Second)
		lo, hi := time.Duration(float64(base)*0.9), time.Duration(float64(base)*1.1)
		for range 200 {
			d, ok := p.Delay(n, 0, nil)
			if !ok || d < lo || d > hi {
				t.Fatalf("Delay(%d, 0, nil) = %v, %v; want within [%v, %v], true", n, d, ok, lo, hi)
			}
		}
	}
}

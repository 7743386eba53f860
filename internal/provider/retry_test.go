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
	provider.ClassDeprecated, provider.ClassInvalidCall, provider.ClassIncomplete, provider.ClassCursorLost,
	provider.ClassResponseTooLarge,
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
	for _, c := range []provider.Class{provider.ClassCancelled, provider.ClassNoRoute, provider.ClassDeprecated, provider.ClassInvalidCall,
		provider.ClassUnsupported, provider.ClassCursorLost, provider.ClassResponseTooLarge} {
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

func TestRetryPolicyKey(t *testing.T) {
	tests := []struct {
		policy provider.RetryPolicy
		want   string
	}{
		{provider.RetryPolicy{}, "normal"},
		{provider.RetryPolicy{Mode: provider.RetryAlways}, "always"},
		{provider.RetryPolicy{Mode: provider.RetryNever}, "never"},
	}
	for _, tt := range tests {
		if got := tt.policy.Key(); got != tt.want {
			t.Errorf("RetryPolicy{Mode: %q}.Key() = %q; want %q", tt.policy.Mode, got, tt.want)
		}
	}
}

// step is one call of Next in a sequence.
type step struct {
	class provider.Class
	hint  time.Duration
	want  time.Duration
	ok    bool
}

func TestRetryPolicyNext(t *testing.T) {
	const s = time.Second
	srv := func(want time.Duration) step { return step{class: provider.ClassServer, want: want, ok: true} }
	stop := func(c provider.Class) step { return step{class: c} }
	always := provider.RetryPolicy{Mode: provider.RetryAlways, Jitter: -1}
	tests := []struct {
		name   string
		policy provider.RetryPolicy
		steps  []step
	}{
		{"normal: two retries", noJitter, []step{srv(500 * ms), srv(s), stop(provider.ClassServer)}},
		{"always: doubling to the cap", always, []step{srv(500 * ms), srv(s), srv(2 * s), srv(4 * s), srv(8 * s), srv(10 * s), srv(10 * s), srv(10 * s)}},
		{"custom initial and cap", provider.RetryPolicy{Mode: provider.RetryAlways, Initial: 100 * ms, Max: 300 * ms, Jitter: -1}, []step{srv(100 * ms), srv(200 * ms), srv(300 * ms), srv(300 * ms)}},
		{"initial above the cap", provider.RetryPolicy{Mode: provider.RetryAlways, Initial: 20 * s, Jitter: -1}, []step{srv(10 * s), srv(10 * s)}},
		{"max retries 3", provider.RetryPolicy{MaxRetries: 3, Jitter: -1}, []step{srv(500 * ms), srv(s), srv(2 * s), stop(provider.ClassServer)}},
		{"negative max retries", provider.RetryPolicy{MaxRetries: -1}, []step{stop(provider.ClassServer)}},
		{"never", provider.RetryPolicy{Mode: provider.RetryNever}, []step{stop(provider.ClassServer)}},
		{"not retryable", noJitter, []step{stop(provider.ClassAuth)}},
		{"hint honoured without jitter", provider.RetryPolicy{}, []step{{class: provider.ClassRateLimit, hint: 1100 * ms, want: 1100 * ms, ok: true}}},
		{"hint at the cap", provider.RetryPolicy{}, []step{{class: provider.ClassRateLimit, hint: 10 * s, want: 10 * s, ok: true}}},
		{"hint beyond the cap", provider.RetryPolicy{}, []step{{class: provider.ClassRateLimit, hint: 10*s + ms}}},
		{"hint beyond a custom cap", provider.RetryPolicy{Max: 2 * s}, []step{{class: provider.ClassRateLimit, hint: 3 * s}}},
		{"hint on a non-retryable class", provider.RetryPolicy{}, []step{{class: provider.ClassQuota, hint: s}}},
		{"hint does not reset the backoff", noJitter, []step{{class: provider.ClassRateLimit, hint: 3 * s, want: 3 * s, ok: true}, srv(s)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bo := tt.policy.NewBackOff()
			for i, st := range tt.steps {
				f := provider.Fail(st.class, "test", nil)
				f.RetryAfter = st.hint
				got, ok := tt.policy.Next(bo, f, i+1)
				if got != st.want || ok != st.ok {
					t.Errorf("Next(%s, hint %v, %d) = %v, %v; want %v, %v", st.class, st.hint, i+1, got, ok, st.want, st.ok)
				}
			}
		})
	}
}

// TestRetryPolicyNextJitter: with the default 10% jitter every delay stays
// within ±10% of its base.
func TestRetryPolicyNextJitter(t *testing.T) {
	p := provider.RetryPolicy{Mode: provider.RetryAlways}
	f := provider.Fail(provider.ClassServer, "test", nil)
	for range 200 {
		bo := p.NewBackOff()
		for n := 1; n <= 8; n++ {
			w := jittered(min(500*ms<<(n-1), 10*time.Second))
			if d, ok := p.Next(bo, f, n); !ok || !w.has(d) {
				t.Fatalf("Next(SERVER, %d) = %v, %v; want within %v, true", n, d, ok, w)
			}
		}
	}
}

// FuzzRetryPolicyNext: whatever the mode, class, retry count, hint and
// delays, Next never panics, never waits less than zero or more than
// Max+10%, honours a hint up to Max exactly, never retries a hint beyond
// Max, and outside always mode never exceeds MaxRetries.
func FuzzRetryPolicyNext(f *testing.F) {
	f.Add("normal", "SERVER", uint8(3), int64(0), uint32(0), uint32(0))
	f.Add("always", "AUTH", uint8(20), int64(0), uint32(0), uint32(0))
	f.Add("always", "RATE_LIMIT", uint8(2), int64(1500), uint32(100), uint32(2000))
	f.Add("never", "SERVER", uint8(1), int64(0), uint32(0), uint32(0))
	f.Add("normal", "RATE_LIMIT", uint8(2), int64(60000), uint32(0), uint32(0))
	f.Add("", "CANCELLED", uint8(1), int64(-5), uint32(1), uint32(1))
	f.Add("Always", "TIMEOUT", uint8(9), int64(0), uint32(20000), uint32(10000))
	f.Fuzz(func(t *testing.T, mode, class string, retries uint8, hintMS int64, initialMS, maxMS uint32) {
		p := provider.RetryPolicy{
			Mode:    provider.RetryMode(mode),
			Initial: time.Duration(initialMS) * ms,
			Max:     time.Duration(maxMS) * ms,
		}
		limit := p.Max
		if limit <= 0 {
			limit = provider.DefaultRetryPolicy.Max
		}
		fail := provider.Fail(provider.Class(class), "fuzz", nil)
		fail.RetryAfter = time.Duration(hintMS%(1<<40)) * ms
		bo := p.NewBackOff()
		for n := 1; n <= int(retries%64); n++ {
			d, ok := p.Next(bo, fail, n)
			if d < 0 || d > limit+limit/10 {
				t.Fatalf("Next(%q, %q, %d, hint %v) with Initial %v Max %v = %v; want within [0, %v]", mode, class, n, fail.RetryAfter, p.Initial, p.Max, d, limit+limit/10)
			}
			if !ok && d != 0 {
				t.Fatalf("Next(%q, %q, %d) = %v, false; want 0 when not retrying", mode, class, n, d)
			}
			if ok && !p.Retryable(fail.Class) {
				t.Fatalf("Next(%q, %q, %d) retries a class Retryable refuses", mode, class, n)
			}
			if ok && fail.RetryAfter > 0 && d != fail.RetryAfter {
				t.Fatalf("Next(%q, %q, %d, hint %v) = %v; want the hint exactly", mode, class, n, fail.RetryAfter, d)
			}
			if ok && fail.RetryAfter > limit {
				t.Fatalf("Next(%q, %q, %d, hint %v) retries; want no retry for a hint beyond Max %v", mode, class, n, fail.RetryAfter, limit)
			}
			if ok && p.Mode != provider.RetryAlways && n > provider.DefaultRetryPolicy.MaxRetries {
				t.Fatalf("Next(%q, %q, %d) retries; want at most %d retries outside always mode", mode, class, n, provider.DefaultRetryPolicy.MaxRetries)
			}
			if !ok {
				return
			}
		}
	})
}

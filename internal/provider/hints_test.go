package provider_test

import (
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/provider"
)

func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func TestRetryHint(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name    string
		h       http.Header
		message string
		want    time.Duration
	}{
		{"none", header(), "", 0},
		{"nil header", nil, "", 0},
		{"retry-after-ms", header("retry-after-ms", "1500"), "", 1500 * time.Millisecond},
		{"retry-after-ms fractional", header("retry-after-ms", "20.5"), "", 20500 * time.Microsecond},
		{"retry-after-ms wins over retry-after", header("retry-after-ms", "250", "retry-after", "7"), "", 250 * time.Millisecond},
		{"retry-after seconds", header("retry-after", "7"), "", 7 * time.Second},
		{"retry-after fractional seconds", header("retry-after", "1.5"), "", 1500 * time.Millisecond},
		{"retry-after with spaces", header("retry-after", " 2 "), "", 2 * time.Second},
		{"retry-after http date", header("retry-after", now.Add(30*time.Second).Format(http.TimeFormat)), "", 30 * time.Second},
		{"retry-after date in the past", header("retry-after", now.Add(-time.Minute).Format(http.TimeFormat)), "", 0},
		{"retry-after zero", header("retry-after", "0"), "", 0},
		{"retry-after negative", header("retry-after", "-3"), "", 0},
		{"retry-after garbage", header("retry-after", "soon"), "", 0},
		{"invalid retry-after-ms falls back", header("retry-after-ms", "x", "retry-after", "3"), "", 3 * time.Second},
		{"header wins over message", header("retry-after", "3"), "Please try again in 1.1s.", 3 * time.Second},
		{"in-band seconds", header(), "Rate limit reached for gpt-4o. Please try again in 1.1s. Visit ...", 1100 * time.Millisecond},
		{"in-band milliseconds", header(), "Please try again in 20ms.", 20 * time.Millisecond},
		{"in-band words", nil, "Retry after 2 seconds", 2 * time.Second},
		{"in-band milliseconds word", nil, "try again in 300 milliseconds", 300 * time.Millisecond},
		{"in-band case", nil, "TRY AGAIN IN 5S", 5 * time.Second},
		{"in-band without a unit", nil, "try again in 5", 0},
		{"in-band minutes are not seconds", nil, "try again in 6m0s", 0},
		{"in-band zero", nil, "try again in 0s", 0},
		{"retry-after-ms overflowing saturates", header("retry-after-ms", "1e300"), "", math.MaxInt64},
		{"retry-after infinite saturates", header("retry-after", "inf"), "", math.MaxInt64},
		{"retry-after NaN", header("retry-after", "NaN"), "", 0},
		{"in-band overflowing saturates", nil, "try again in 99999999999999999999999s", math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := provider.RetryHint(tt.h, tt.message, now); got != tt.want {
				t.Errorf("RetryHint(%v, %q) = %v; want %v", tt.h, tt.message, got, tt.want)
			}
		})
	}
}

func TestRequestID(t *testing.T) {
	long := strings.Repeat("r", 300)
	tests := []struct {
		name string
		h    http.Header
		want string
	}{
		{"none", header(), ""},
		{"nil", nil, ""},
		{"openai", header("x-request-id", "req_1"), "req_1"},
		{"deepseek", header("x-ds-trace-id", "ds_1"), "ds_1"},
		{"openrouter", header("X-Generation-Id", "gen-1"), "gen-1"},
		{"anthropic", header("request-id", "req_011"), "req_011"},
		{"canonical case", header("X-Request-Id", "req_2"), "req_2"},
		{"x-request-id preferred", header("request-id", "b", "x-ds-trace-id", "c", "x-request-id", "a"), "a"},
		{"deepseek before openrouter", header("X-Generation-Id", "g", "x-ds-trace-id", "d"), "d"},
		{"empty value skipped", header("x-request-id", "", "request-id", "r"), "r"},
		{"capped", header("x-request-id", long), long[:128]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := provider.RequestID(tt.h); got != tt.want {
				t.Errorf("RequestID(%v) = %q; want %q", tt.h, got, tt.want)
			}
		})
	}
}

// FuzzRetryHint: whatever the headers and message say, the hint is never
// negative (an overflowing value must not read as "no hint", nor as a
// negative delay).
func FuzzRetryHint(f *testing.F) {
	f.Add("1500", "", "")
	f.Add("", "7", "")
	f.Add("", "Fri, 02 Jan 2026 03:04:35 GMT", "")
	f.Add("", "", "Please try again in 1.1s.")
	f.Add("1e300", "inf", "try again in 99999999999999999999999s")
	f.Add("NaN", "-Inf", "retry after 0.000001 ms")
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, ms, seconds, message string) {
		h := header("retry-after-ms", ms, "retry-after", seconds)
		if got := provider.RetryHint(h, message, now); got < 0 {
			t.Errorf("RetryHint(retry-after-ms %q, retry-after %q, %q) = %v; want >= 0", ms, seconds, message, got)
		}
	})
}

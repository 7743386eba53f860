package provider

import (
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// RequestIDHeaders are the provider request-id headers, in order of preference.
var RequestIDHeaders = []string{"x-request-id", "x-ds-trace-id", "X-Generation-Id", "request-id"}

// RequestID returns the first provider request id found in h.
func RequestID(h http.Header) string {
	for _, k := range RequestIDHeaders {
		if v := h.Get(k); v != "" {
			if len(v) > 128 {
				v = v[:128]
			}
			return v
		}
	}
	return ""
}

var inBandHint = regexp.MustCompile(`(?i)(?:try again|retry) (?:in|after) ([0-9]+(?:\.[0-9]+)?)\s*(ms|milliseconds?|s|sec|seconds?)\b`)

// RetryHint extracts a provider's delay hint: the retry-after-ms header
// (milliseconds), then retry-after (seconds, possibly fractional, or an HTTP
// date), then an in-band "try again in 1.1s" in the error message. It
// returns 0 when there is none.
func RetryHint(h http.Header, message string, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return scale(ms, time.Millisecond)
		}
	}
	if v := strings.TrimSpace(h.Get("retry-after")); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil {
			if s > 0 {
				return scale(s, time.Second)
			}
		} else if t, err := http.ParseTime(v); err == nil {
			if d := t.Sub(now); d > 0 {
				return d
			}
		}
	}
	if m := inBandHint.FindStringSubmatch(message); m != nil {
		n, err := strconv.ParseFloat(m[1], 64)
		if err == nil && n > 0 {
			unit := time.Second
			if strings.HasPrefix(strings.ToLower(m[2]), "m") {
				unit = time.Millisecond
			}
			return scale(n, unit)
		}
	}
	return 0
}

// scale is n units, saturating: a hint too large for a Duration is the
// longest one, never an overflow that reads as negative or as no hint.
func scale(n float64, unit time.Duration) time.Duration {
	if d := n * float64(unit); d < math.MaxInt64 {
		return time.Duration(d)
	}
	return math.MaxInt64
}

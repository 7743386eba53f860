package redact

import (
	"slices"
	"strings"
)

// Marker replaces every piece of credential material.
const Marker = "[REDACTED]"

// maxPasses bounds how often Redact re-scans its own output. A redaction can
// bring two pieces of text together that a rule then matches; re-scanning
// until nothing changes makes Redact idempotent. Two passes settle every
// input seen in tests and fuzzing; the rest is headroom.
const maxPasses = 8

// span is a half-open byte range [start, end) of the text being redacted.
type span struct{ start, end int }

// Contains reports whether s holds credential material that Redact would
// replace.
func Contains(s string) bool {
	return len(findText(s, nil)) > 0
}

// Redact replaces the credential material in s with Marker and reports
// whether it replaced anything. Text outside the replaced ranges is kept
// byte for byte. Redact is idempotent: Redact(Redact(s)) == Redact(s).
//
// Text often holds JSON- or shell-escaped fragments (tool arguments that
// are not valid JSON, logs of requests), so the rules run twice: on s as it
// is, and on s with its backslash escapes decoded (\n, \", \uXXXX, …). A
// finding in the decoded view replaces the escapes it came from, so a key
// spelled "\u0073k-…" is no way around the rules.
func Redact(s string) (out string, redacted bool) {
	return redactText(s, nil)
}

// redactText is Redact, counting its work on m.
func redactText(s string, m *meter) (out string, redacted bool) {
	out = s
	for range maxPasses {
		spans := findText(out, m)
		if len(spans) == 0 {
			break
		}
		out = apply(out, spans)
		m.add(len(out))
	}
	return out, out != s
}

// findText finds credentials in s and in s with its escapes decoded.
func findText(s string, m *meter) []span {
	spans := find(s, m)
	m.add(len(s))
	if strings.IndexByte(s, '\\') < 0 {
		return spans
	}
	d := decode(s)
	m.add(len(s))
	for _, sp := range find(d.text, m) {
		spans = append(spans, d.raw(sp))
	}
	m.add(len(spans))
	return merge(spans)
}

// find runs every rule over s and returns the ranges to replace, sorted and
// merged. A range that already reads Marker is not a finding.
func find(s string, m *meter) []span {
	if len(s) < 4 {
		return nil
	}
	var spans []span
	add := func(a, b int) {
		if a < b && s[a:b] != Marker {
			spans = append(spans, span{a, b})
		}
	}
	for _, r := range rules {
		r(s, m, add)
	}
	m.add(len(spans))
	return merge(spans)
}

// meter counts the work of a redaction: the bytes its scans pass over (up
// to a constant factor per scan) and the findings it sorts. Every rule is
// linear in its text, and the tests hold it to that by reading a meter
// (export_test.go); everywhere else the meter is nil and counting costs a
// nil check. It is a counter threaded through the calls, not global state,
// so concurrent redactions stay independent.
type meter struct{ n int }

// add counts k units of work.
func (m *meter) add(k int) {
	if m != nil {
		m.n += k
	}
}

// merge sorts spans and joins the ones that overlap or touch, so adjacent
// findings become one marker.
func merge(spans []span) []span {
	if len(spans) < 2 {
		return spans
	}
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	out := spans[:1]
	for _, sp := range spans[1:] {
		last := &out[len(out)-1]
		if sp.start <= last.end {
			last.end = max(last.end, sp.end)
			continue
		}
		out = append(out, sp)
	}
	return out
}

// apply replaces each (sorted, disjoint) span of s with Marker.
func apply(s string, spans []span) string {
	var b strings.Builder
	b.Grow(len(s) + len(spans)*len(Marker))
	prev := 0
	for _, sp := range spans {
		b.WriteString(s[prev:sp.start])
		b.WriteString(Marker)
		prev = sp.end
	}
	b.WriteString(s[prev:])
	return b.String()
}

package redact

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// RedactJSON redacts a tool call's JSON arguments and reports whether it
// replaced anything.
//
// For valid JSON the result is valid JSON with the same structure: keys,
// numbers, literals, punctuation, order and whitespace are kept byte for
// byte. Inside each string (object keys included) the decoded text goes
// through the rules of Redact, and only the escaped bytes of a finding are
// replaced by Marker; escapes elsewhere in the string are kept. The value
// of a key that names a secret (see isSecretKey) is replaced whole when it
// passes valueOK: a string's contents, or a number, which becomes the
// string "[REDACTED]"; true, false, null, objects and short values are
// kept. The elements of an array that is the value of such a key are
// treated the same way, recursively; the members of an object there are
// judged by their own keys. Two more shapes of tool arguments carry a key
// apart from its value, and are treated alike: the element after a flag
// naming a secret in an array (argv: ["--password", "…"]), and the "value"
// member after a "name" or "key" member naming a secret in the same object
// (env lists: {"name": "DB_PASSWORD", "value": "…"}; a "value" before its
// "name" is not covered, since a Stream has emitted it by then).
//
// Input that is not valid JSON is redacted as text: the longest prefix the
// JSON grammar accepts is redacted as above, and everything from the start
// of the member (key included) or value during which the grammar broke, or
// that the input ends inside, goes through Redact. Text that is not JSON
// at all is therefore redacted exactly like Redact. This definition is what
// lets a Stream produce the same bytes without seeing the end first.
//
// RedactJSON is idempotent on valid JSON: RedactJSON(RedactJSON(x)) is
// RedactJSON(x).
func RedactJSON(args string) (out string, redacted bool) {
	return redactJSON(args, nil)
}

// redactJSON is RedactJSON, counting its work on m.
func redactJSON(args string, m *meter) (out string, redacted bool) {
	st := &Stream{m: m}
	out = st.Write(args) + st.Close()
	return out, out != args
}

// redactString redacts the body of a JSON string (between its quotes,
// valid JSON); secret tells whether it is the value of a secret key. It
// counts its work on m.
func redactString(raw string, secret bool, m *meter) string {
	out := raw
	if secret {
		d := decode(out)
		if a, b, ok := secretValueSpan(d.text); ok {
			out = d.apply(out, []span{{a, b}})
		}
		m.add(3 * len(raw))
	}
	for range maxPasses {
		d := decode(out)
		m.add(len(out))
		spans := find(d.text, m)
		if len(spans) == 0 {
			break
		}
		out = d.apply(out, spans)
		m.add(len(out))
	}
	return out
}

// decoded is a JSON string body decoded, with, for each byte of text, the
// range of the raw body that produced it (one byte, a two-byte escape, or
// one or two \uXXXX escapes).
type decoded struct {
	text       string
	start, end []int
}

// decode decodes the backslash escapes of a JSON string body, or leniently
// of any text: lone surrogates decode to U+FFFD, an unknown escape \x to x,
// a malformed \u or a final backslash stays as it is, and bytes that are
// not UTF-8 are kept.
func decode(raw string) decoded {
	if strings.IndexByte(raw, '\\') < 0 {
		return decoded{text: raw}
	}
	var b strings.Builder
	b.Grow(len(raw))
	start := make([]int, 0, len(raw))
	end := make([]int, 0, len(raw))
	emit := func(c byte, s, e int) {
		b.WriteByte(c)
		start = append(start, s)
		end = append(end, e)
	}
	var buf [utf8.UTFMax]byte
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' || i+1 >= len(raw) {
			emit(c, i, i+1)
			i++
			continue
		}
		switch e := raw[i+1]; e {
		case 'u':
			r, n := decodeU(raw[i:])
			if n == 0 {
				emit(c, i, i+1)
				i++
				continue
			}
			for _, x := range buf[:utf8.EncodeRune(buf[:], r)] {
				emit(x, i, i+n)
			}
			i += n
		default:
			emit(unescape(e), i, i+2)
			i += 2
		}
	}
	return decoded{text: b.String(), start: start, end: end}
}

// decodeU decodes a \uXXXX escape at the start of s, joining a surrogate
// pair, and returns the rune and the raw length, or n == 0 if s does not
// start with a well-formed escape.
func decodeU(s string) (r rune, n int) {
	r1, ok := hex4(s)
	if !ok {
		return 0, 0
	}
	if utf16.IsSurrogate(r1) {
		if r2, ok := hex4(s[6:]); ok {
			if dec := utf16.DecodeRune(r1, r2); dec != utf8.RuneError {
				return dec, 12
			}
		}
		return utf8.RuneError, 6
	}
	return r1, 6
}

// hex4 parses \uXXXX at the start of s.
func hex4(s string) (rune, bool) {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[2:6]) {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

func unescape(e byte) byte {
	switch e {
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return e // '"', '\\', '/'
}

// raw returns the range of the raw text behind a span of d.text, widened
// to whole escapes.
func (d decoded) raw(sp span) span {
	if d.start == nil {
		return sp
	}
	return span{d.start[sp.start], d.end[sp.end-1]}
}

// apply replaces the raw bytes behind each span of d.text with Marker.
// Spans widen to whole escapes, so the result stays a valid string body.
func (d decoded) apply(raw string, spans []span) string {
	rs := make([]span, 0, len(spans))
	for _, sp := range spans {
		rs = append(rs, d.raw(sp))
	}
	return apply(raw, merge(rs))
}

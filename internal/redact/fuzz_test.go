package redact

import (
	"encoding/json"
	"strings"
	"testing"
)

// fuzzSeeds are the inputs every fuzz target starts from.
func fuzzSeeds() []string {
	seeds := streamInputs()
	seeds = append(seeds, referenceCases...)
	for _, adv := range adversarialInputs {
		seeds = append(seeds, adv.gen(200))
	}
	return append(seeds,
		``, `{}`, `[]`, `"x"`, `0`, `-1.5e+3`, `true`, `null`, ` `,
		`{"a":"\u00e9\ud83d\ude00\ud800"}`,
		`{"password":"\\\"\/\b\f\n\r\t"}`,
		`{"k\"ey": [1, {"token": ["a1b2c3d4", {"x": 12345}]}]}`,
		"{\"bad\": \"\xff\xfe\"}",
		`{"a": 01}`, `{"a": 1.}`, `{"a": tru}`, `{"a" 1}`, `{,}`, `[1,]`,
		`{"command": "-----BEGIN PRIVATE KEY-----\nabc`,
		`password=hunter2 token=abcd1234 https://u:p4ss@h Bearer abc123def456`,
	)
}

// maxReferenceLen bounds the fuzz inputs compared with the reference
// implementation (oracle_test.go), which is quadratic on some texts.
const maxReferenceLen = 4 << 10

// shape maps a JSON text to its bytes outside strings and numbers, each
// string or number reduced to '_': what RedactJSON must keep.
func shape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
			b.WriteByte('_')
		case c == '-' || c >= '0' && c <= '9':
			for i+1 < len(s) && strings.IndexByte("0123456789.eE+-", s[i+1]) >= 0 {
				i++
			}
			b.WriteByte('_')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func FuzzRedact(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, redacted := Redact(in)
		if redacted != (out != in) {
			t.Fatalf("Redact(%q) redacted = %v with output %q", in, redacted, out)
		}
		if Contains(in) != redacted {
			t.Fatalf("Contains(%q) = %v; Redact says %v", in, !redacted, redacted)
		}
		if again, _ := Redact(out); again != out {
			t.Fatalf("Redact(Redact(%q)) = %q; want %q", in, again, out)
		}
		if len(in) <= maxReferenceLen {
			if want, _ := refRedact(in); out != want {
				t.Fatalf("Redact(%q) = %q; the reference gives %q", in, out, want)
			}
		}
	})
}

func FuzzRedactJSON(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, redacted := RedactJSON(in)
		if redacted != (out != in) {
			t.Fatalf("RedactJSON(%q) redacted = %v with output %q", in, redacted, out)
		}
		if json.Valid([]byte(in)) {
			if !json.Valid([]byte(out)) {
				t.Fatalf("RedactJSON(%q) = %q; not valid JSON", in, out)
			}
			if shape(out) != shape(in) {
				t.Fatalf("RedactJSON(%q) = %q; structure changed", in, out)
			}
		}
		if again, _ := RedactJSON(out); again != out {
			t.Fatalf("RedactJSON(RedactJSON(%q)) = %q; want %q", in, again, out)
		}
		if len(in) <= maxReferenceLen {
			if want, _ := refRedactJSON(in); out != want {
				t.Fatalf("RedactJSON(%q) = %q; the reference gives %q", in, out, want)
			}
		}
	})
}

func FuzzStream(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s, []byte{1, 7, 3, 0, 250})
	}
	f.Fuzz(func(t *testing.T, in string, cuts []byte) {
		want, _ := RedactJSON(in)
		// Each cut byte is the length of the next fragment.
		var frags []string
		rest := in
		for _, c := range cuts {
			n := min(int(c), len(rest))
			frags = append(frags, rest[:n])
			rest = rest[n:]
		}
		frags = append(frags, rest)
		if got := strings.Join(streamSplit(frags), ""); got != want {
			t.Fatalf("Stream(%q) = %q; want RedactJSON = %q", frags, got, want)
		}
	})
}

package redact

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
)

// The rules were made linear without changing what they redact. The tests
// here compare the package with the implementation as it was before, kept
// as an oracle in oracle_test.go (every name prefixed "ref"); the oracle is
// quadratic on adversarial text, so they use small inputs.

// checkReference fails t unless Redact, Contains, RedactJSON and a Stream
// agree with the oracle on in.
func checkReference(t *testing.T, in string) {
	t.Helper()
	if got, want := Contains(in), refContains(in); got != want {
		t.Fatalf("Contains(%q) = %v; the reference says %v", in, got, want)
	}
	got, gotR := Redact(in)
	if want, wantR := refRedact(in); got != want || gotR != wantR {
		t.Fatalf("Redact(%q) = %q, %v; the reference gives %q, %v", in, got, gotR, want, wantR)
	}
	gotJ, gotJR := RedactJSON(in)
	wantJ, wantJR := refRedactJSON(in)
	if gotJ != wantJ || gotJR != wantJR {
		t.Fatalf("RedactJSON(%q) = %q, %v; the reference gives %q, %v", in, gotJ, gotJR, wantJ, wantJR)
	}
	if s := strings.Join(streamSplit(streamFrags(in)), ""); s != wantJ {
		t.Fatalf("Stream(%q) = %q; the reference RedactJSON gives %q", in, s, wantJ)
	}
}

// referencePieces are the fragments random texts are made of: the
// separators, keys, quotes, escapes, schemes, headers and guards the rules
// react to, and the bytes that end or hide a value.
var referencePieces = []string{
	"password", "PASSWORD", "token", "api_key", "apiKey", "x-api-key", "secret", "Authorization", "page_token",
	"=", "=", "=", ":", ": ", " = ", "==", ":=", "=>", "&", "&format=json", "?",
	" ", " ", "\t", "\n", "\r\n", `\n`, `\r`, `\t`, "\\", `\\`,
	`"`, `"`, "'", `\"`, "`", ";", ",", ")", "}", "]", "[", "{",
	Marker, Marker, "[REDACTED", "REDACTED]",
	"your", "YOUR", "xxxx", "placeholder", "replace-me", "null", "NULL", "nİl", "none", "true", "undefined", "\u212a",
	"$", "${X}", "%X%", "{{", "<", "****", "aaaa", "1111",
	"Bearer ", "bearer\t", "Basic ", "Token ", "bot ", "YWxpY2U6czNjcjN0LXBhc3M=",
	"-----BEGIN PRIVATE KEY-----", "-----BEGIN RSA PRIVATE KEY-----", "-----END", "-----END PRIVATE KEY-----", "-----",
	"curl", " -u ", "--user=", "alice:", "a:b",
	"--password ", "--token=", "--", "-",
	"https://", "://", "u:", "@", "host",
	"abcd1234", "hunter2hunter2", "x", "ab", "Zz9",
	`\u003d`, `\u0022`, `\u0070`, `\ud800`, "\xff", "\xfe", "\xff\xfe", "é", "ééé",
	keyOpenAILegacy, keyGitHub, keyAWSID, "sk-ant-", "eyJhbGciOi.eyJzdWIi.", "xoxb-1234567890",
}

// randomText joins up to n random pieces. Half the texts draw them from a
// few pieces only, so that related pieces meet often.
func randomText(r *rand.Rand, n int) string {
	pieces := referencePieces
	if r.IntN(2) == 0 {
		pieces = make([]string, 2+r.IntN(6))
		for i := range pieces {
			pieces[i] = referencePieces[r.IntN(len(referencePieces))]
		}
	}
	var b strings.Builder
	for range 1 + r.IntN(n) {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

// referenceCases are inputs written for particular memos: the lines of
// curl matches, runs with Markers, headers sharing an end.
var referenceCases = []string{
	"curl x\nfoo -u a:bcdefgh\nbar -u a:b1234567 -u c:d7654321\ncurl -u e:f1234567",
	"x -u a:bcdefgh\ncurl y -u a:b1234567\n -u c:d1234567 curl -u e:f1234567\n\n -u g:h1234567",
	"curl\n" + strings.Repeat("x -u a:bcdefgh ", 3) + "\ncurl -u a:b1234567",
	"password=ab" + Marker + "cd" + Marker + "password=" + Marker + "xy&token=" + Marker,
	"password=" + Marker[:5] + "password=" + Marker[5:] + "&api_key=abcd1234",
	"-----BEGIN PRIVATE KEY-----  \\n-----BEGIN PRIVATE KEY-----x \n\t \\\\n",
	"-----BEGIN PRIVATE KEY-----\\-----BEGIN PRIVATE KEY-----\\n\\n-----END",
}

func TestMatchesReference(t *testing.T) {
	var inputs []string
	inputs = append(inputs, fuzzSeeds()...)
	inputs = append(inputs, referenceCases...)
	for _, adv := range adversarialInputs {
		for _, n := range []int{1, 20, 64, 300, 1500} {
			inputs = append(inputs, adv.gen(n))
		}
	}
	for _, in := range inputs {
		checkReference(t, in)
	}

	r := rand.New(rand.NewPCG(7, 8))
	n := 3000
	if testing.Short() {
		n = 300
	}
	for range n {
		text := randomText(r, 24)
		checkReference(t, text)
		// The same text inside JSON, where it goes through redactString.
		checkReference(t, `{"a": "`+text+`", "password": "`+randomText(r, 4)+`"}`)
		checkReference(t, `{"password":`+text+`}`)
	}
}

// TestRunsMatchScans checks runs against the scans it memoizes: runEnd and
// valueOK from every start in a run, Markers in it included.
func TestRunsMatchScans(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for range 800 {
		s := randomText(r, 16)
		for from := range len(s) {
			rs := runs{s: s}
			for a := from; a < len(s); a++ {
				b := rs.runEnd(a)
				if want := runEnd(s, a, nil); b != want {
					t.Fatalf("runs.runEnd(%d) in %q (from %d) = %d; runEnd = %d", a, s, from, b, want)
				}
				if got, want := rs.valueOK(a, b), valueOK(s[a:b]); got != want {
					t.Fatalf("runs.valueOK(%q) in %q = %v; valueOK = %v", s[a:b], s, got, want)
				}
			}
		}
	}
}

// TestTailTrimMatchesTrim checks that tailTrim gives what the trailing trim
// of trimBreaks computes for every start, however earlier calls primed it.
func TestTailTrimMatchesTrim(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	pieces := []string{" ", "\n", `\n`, `\r`, `\t`, `\\n`, "\\", "n", "t", "x", "-", "\t"}
	for range 5000 {
		var b strings.Builder
		for range 1 + r.IntN(12) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		s := b.String()
		var tt tailTrim
		for a := 0; a <= len(s); a += 1 + r.IntN(3) {
			if got, want := tt.trim(s, a, len(s), nil), trimTrailing(s, a, len(s)); got != want {
				t.Fatalf("tailTrim.trim(%q, %d) = %d; trimTrailing = %d", s, a, got, want)
			}
		}
	}
}

// TestFillInsFoldASCII checks what runs.gather relies on to find fill-in
// words under ASCII case folding: strings.ToLower makes an ASCII byte of no
// rune but ASCII, U+0130 and U+212A, and the fill-in words are lower-case
// ASCII without the 'i' and 'k' those two become.
func TestFillInsFoldASCII(t *testing.T) {
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		if l := unicode.ToLower(r); l < 0x80 && r != 0x130 && r != 0x212a {
			t.Errorf("unicode.ToLower(%U) = %q: another rune lower-cases to ASCII", r, l)
		}
	}
	for _, w := range fillIns {
		if w != strings.ToLower(w) || strings.ContainsAny(w, "ik") || strings.IndexFunc(w, func(r rune) bool { return r >= 0x80 }) >= 0 {
			t.Errorf("fill-in %q is not lower-case ASCII without 'i' and 'k'", w)
		}
	}
}

package redact

import (
	"encoding/base64"
	"regexp"
	"strings"
	"unicode/utf8"
)

// rule reports the ranges of s it finds through add, and counts its work
// on m. Every rule documents what it matches, what exactly it replaces, and
// its false-positive guard; and every rule is linear in len(s): a hostile
// text can repeat any candidate (a separator, a header, a flag) as often as
// it likes, so no rule may rescan from each candidate what the candidates
// share (see runs, tailTrim and curlUserSpans).
type rule func(s string, m *meter, add func(start, end int))

// rules are all the detectors Redact runs; their findings are merged.
var rules = []rule{
	privateKeySpans,
	tokenSpans,
	bearerSpans,
	basicSpans,
	urlPasswordSpans,
	curlUserSpans,
	keyValueSpans,
	flagSpans,
}

// tokenRule is a credential recognised by its shape alone: a vendor prefix
// and a run of token characters. The whole token is replaced.
type tokenRule struct {
	name string
	re   *regexp.Regexp
	// class is the token's character class: the byte after a match must
	// not belong to it, so the match is a whole token and not the prefix
	// of a longer word.
	class func(byte) bool
	// guard, if set, must accept the matched token.
	guard func(tok string) bool
	// hints, if set, are literals one of which a text must contain for
	// the rule to run: a cheap filter for patterns without a literal
	// prefix.
	hints []string
}

// tokenRules, with their guards. The prefix itself is the main guard: each
// is specific enough not to occur in prose, and the token must start a word
// (the byte before it is not a letter, digit or '_', unless it is the
// letter of a backslash escape such as \n in JSON-escaped text).
var tokenRules = []tokenRule{
	// Anthropic API and admin keys: sk-ant-api03-..., sk-ant-admin01-...
	// Guard: at least 20 characters after "sk-ant-".
	{name: "anthropic", re: regexp.MustCompile(`sk-ant-[A-Za-z0-9_-]{20,}`), class: isB64URL},
	// OpenAI keys: sk-<48>, sk-proj-..., sk-svcacct-..., sk-admin-...
	// Guard: at least 20 characters after the prefix, letters and digits
	// both present, and one dash-free segment of 16 or more characters, so
	// kebab-case words ("sk-learn-...", "sk-your-api-key-here") are not
	// taken for keys.
	{name: "openai", re: regexp.MustCompile(`sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}`), class: isB64URL, guard: randomSegment},
	// AWS access key IDs: AKIA (long-term) or ASIA (temporary) and exactly
	// 16 upper-case letters or digits. Guard: exact length, whole word.
	{name: "aws-access-key-id", re: regexp.MustCompile(`(?:AKIA|ASIA)[A-Z0-9]{16}`), class: isAlnum, hints: []string{"AKIA", "ASIA"}},
	// GitHub tokens: ghp_ (classic), gho_ (OAuth), ghu_/ghs_ (app), ghr_
	// (refresh), 36 characters after the prefix. Guard: that length.
	{name: "github", re: regexp.MustCompile(`gh[pousr]_[A-Za-z0-9]{36,}`), class: isAlnum, hints: []string{"gh"}},
	// GitHub fine-grained tokens: github_pat_ and 82 characters. Guard: at
	// least 30 after the prefix.
	{name: "github-pat", re: regexp.MustCompile(`github_pat_[A-Za-z0-9_]{30,}`), class: isWord},
	// Slack tokens: xoxa-, xoxb-, xoxp-, xoxr-, xoxs-. Guard: at least 10
	// characters after the prefix, digits among them (Slack tokens embed
	// numeric team and user IDs).
	{name: "slack", re: regexp.MustCompile(`xox[abprs]-[A-Za-z0-9-]{10,}`), class: isAlnumDash, guard: hasDigit, hints: []string{"xox"}},
	// Google API keys: AIza and exactly 35 characters. Guard: exact length,
	// whole word.
	{name: "google", re: regexp.MustCompile(`AIza[0-9A-Za-z_-]{35}`), class: isB64URL},
	// Stripe secret and restricted keys, live and test mode. Guard: at
	// least 10 characters after the prefix.
	{name: "stripe", re: regexp.MustCompile(`[sr]k_(?:live|test)_[0-9A-Za-z]{10,}`), class: isAlnum, hints: []string{"k_live_", "k_test_"}},
	// JWTs: three base64url segments, the header starting eyJ ({"). Guard:
	// header and payload of plausible length; a bare "eyJ" is not enough.
	// A JWE's further segments are left; its key and payload are the first
	// three.
	{name: "jwt", re: regexp.MustCompile(`eyJ[A-Za-z0-9_-]{7,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*`), class: isB64URL},
}

// tokenSpans runs the tokenRules. Their matches do not overlap, and each
// guard reads its match only.
func tokenSpans(s string, m *meter, add func(int, int)) {
	for i := range tokenRules {
		r := &tokenRules[i]
		m.add(len(r.hints) * len(s))
		if r.hints != nil && !containsAny(s, r.hints) {
			continue
		}
		m.add(len(s))
		for _, x := range r.re.FindAllStringIndex(s, -1) {
			a, b := x[0], x[1]
			if !wordStart(s, a) || (b < len(s) && r.class(s[b])) {
				continue
			}
			m.add(2 * (b - a))
			if r.guard != nil && !r.guard(s[a:b]) {
				continue
			}
			add(a, b)
		}
	}
}

// randomSegment is the OpenAI key guard (see tokenRules).
func randomSegment(tok string) bool {
	body := tok[len("sk-"):]
	for _, p := range []string{"proj-", "svcacct-", "admin-"} {
		body = strings.TrimPrefix(body, p)
	}
	if !hasDigit(body) || !hasLetter(body) {
		return false
	}
	longest := 0
	for seg := range strings.FieldsFuncSeq(body, func(r rune) bool { return r == '-' || r == '_' }) {
		longest = max(longest, len(seg))
	}
	return longest >= 16
}

// bearerRe finds "Bearer <token>" authorization values, case-insensitively.
var bearerRe = regexp.MustCompile(`(?i)\bbearer[ \t]+([a-z0-9._~+/=-]{8,})`)

// bearerSpans replaces the token of a "Bearer <token>" value, keeping the
// scheme. Guard: the token is at least 8 characters and looks generated:
// it holds a digit, or mixes cases over 16 or more characters. "bearer
// instruments" and "Bearer YOUR_TOKEN_HERE" are not tokens; neither is a
// variable reference ("Bearer $TOKEN"), whose '$' is not a token character.
func bearerSpans(s string, m *meter, add func(int, int)) {
	m.add(len(s))
	if !containsFold(s, "bearer") {
		return
	}
	m.add(len(s))
	for _, x := range bearerRe.FindAllStringSubmatchIndex(s, -1) {
		a, b := x[2], x[3]
		if b < len(s) && isBearerChar(s[b]) {
			continue
		}
		m.add(3 * (b - a))
		if looksGenerated(s[a:b]) {
			add(a, b)
		}
	}
}

// looksGenerated reports whether tok looks like a machine-generated
// credential rather than a word: it holds a digit, or both cases over at
// least 16 characters.
func looksGenerated(tok string) bool {
	if hasDigit(tok) {
		return true
	}
	return len(tok) >= 16 && strings.ContainsAny(tok, "abcdefghijklmnopqrstuvwxyz") &&
		strings.ContainsAny(tok, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
}

// basicRe finds "Basic <base64>" authorization values, case-insensitively.
var basicRe = regexp.MustCompile(`(?i)\bbasic[ \t]+([a-z0-9+/]{4,}={0,2})`)

// basicSpans replaces the credentials of a "Basic <base64>" value, keeping
// the scheme. Guard: the value must decode (standard base64, padded or not)
// to printable "user:password" text, so "Basic instructions" or "basic
// setup" never match.
func basicSpans(s string, m *meter, add func(int, int)) {
	m.add(len(s))
	if !containsFold(s, "basic") {
		return
	}
	m.add(len(s))
	for _, x := range basicRe.FindAllStringSubmatchIndex(s, -1) {
		a, b := x[2], x[3]
		if b < len(s) && (isAlnum(s[b]) || s[b] == '+' || s[b] == '/' || s[b] == '=') {
			continue
		}
		m.add(4 * (b - a))
		if decodesToUserPass(s[a:b]) {
			add(a, b)
		}
	}
}

func decodesToUserPass(v string) bool {
	dec, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		dec, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(v, "="))
		if err != nil {
			return false
		}
	}
	colon := strings.IndexByte(string(dec), ':')
	if colon < 0 || colon == len(dec)-1 || !utf8.Valid(dec) {
		return false
	}
	for _, c := range dec {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// pemHeaderRe finds the header of a PEM private key of any kind (RSA, EC,
// DSA, OPENSSH, ENCRYPTED, PGP ... BLOCK).
var pemHeaderRe = regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY[A-Z0-9 ]*-----`)

// privateKeySpans replaces the body of a PEM private key, keeping its
// BEGIN and END lines and the line breaks (real or JSON-escaped \n) around
// the body. The body runs to the next "-----END" or, if the key is cut off,
// to the end of the text. Guard: only headers naming a PRIVATE KEY count;
// certificates and public keys are left alone.
//
// Cost: headers repeated without an END share the end of their bodies. The
// next "-----END" is searched once for all the headers before it, and the
// trailing trim of a shared end is walked once (tailTrim).
func privateKeySpans(s string, m *meter, add func(int, int)) {
	m.add(len(s))
	// end is the first "-----END" at or after the header it was searched
	// from, len(s) if none. While it is at or after the next header, it is
	// that header's too: no "-----END" lies in between.
	end := -1
	var tail tailTrim
	for _, h := range pemHeaderRe.FindAllStringIndex(s, -1) {
		a := h[1]
		if end < a {
			end = len(s)
			if i := strings.Index(s[a:], "-----END"); i >= 0 {
				end = a + i
			}
			m.add(end - a + 1)
		}
		a, b := trimBreaks(s, a, end, m, &tail)
		add(a, b)
	}
}

// trimBreaks narrows [a, b) past leading and trailing whitespace and
// backslash escapes of line breaks and tabs (\n, \r, \t, \\n). The
// trailing trim goes through tail, which remembers it for the next caller
// with the same b.
func trimBreaks(s string, a, b int, m *meter, tail *tailTrim) (int, int) {
	from := a
	for a < b {
		if isSpace(s[a]) {
			a++
			continue
		}
		if s[a] != '\\' {
			break
		}
		for a < b && s[a] == '\\' {
			a++
		}
		if a < b && strings.IndexByte("nrt", s[a]) >= 0 {
			a++
		}
	}
	m.add(a - from + 1)
	return a, tail.trim(s, a, b, m)
}

// tailTrim remembers one trailing trim of trimBreaks: trimming [lo, b) at
// the end left [lo, t). Headers repeated before one end share it, and the
// blanks before that end would be walked back once per header.
//
// The walk back from b depends on the start of the range only when it gets
// within two bytes of it: for any a with lo <= a <= t-2, trimming [a, b)
// makes every step that trimming [lo, b) made, and stops at t for the same
// reason. No byte of a header is trimmed, so of the headers sharing b only
// the last can start past t-2; the others are answered from the memo.
type tailTrim struct {
	ok       bool
	lo, b, t int
}

// trim returns the end of [a, b) after its trailing trim.
func (tt *tailTrim) trim(s string, a, b int, m *meter) int {
	if tt.ok && tt.b == b && tt.lo <= a && a+2 <= tt.t {
		return tt.t
	}
	t := trimTrailing(s, a, b)
	m.add(b - t + 1)
	*tt = tailTrim{ok: true, lo: a, b: b, t: t}
	return t
}

// trimTrailing is the trailing half of trimBreaks.
func trimTrailing(s string, a, b int) int {
	for a < b {
		switch {
		case isSpace(s[b-1]):
			b--
		case b-a >= 2 && s[b-2] == '\\' && strings.IndexByte("nrt", s[b-1]) >= 0:
			b -= 2
			for b > a && s[b-1] == '\\' {
				b--
			}
		default:
			return b
		}
	}
	return b
}

// urlPasswordSpans replaces the password of a URL's userinfo:
// scheme://user:password@host keeps scheme, user and host. Guards: a
// scheme made of URL scheme characters before "://", a colon inside the
// userinfo, a host after '@' (a letter, digit or '['), and a password that
// is not a placeholder (see placeholder). An empty user is allowed
// (https://:token@host).
//
// Cost: "://" is neither a scheme character nor allowed in a userinfo, so
// the scans back over a scheme and forward to the '@' stop at the
// neighbouring "://": they do not overlap.
func urlPasswordSpans(s string, m *meter, add func(int, int)) {
	for i := 0; ; {
		k := strings.Index(s[i:], "://")
		if k < 0 {
			m.add(len(s) - i + 1)
			return
		}
		m.add(k + 3)
		p := i + k
		i = p + 3
		a := p
		for a > 0 && isSchemeChar(s[a-1]) {
			a--
		}
		m.add(2 * (p - a + 1))
		for a < p && !isLetter(s[a]) {
			a++
		}
		if a == p {
			continue
		}
		at := -1
		q := p + 3
		for ; q < len(s); q++ {
			c := s[q]
			if c == '@' {
				at = q
				break
			}
			if c <= ' ' || strings.IndexByte("/?#\"'<>\\`", c) >= 0 {
				break
			}
		}
		m.add(3 * (q - p)) // and the colon and placeholder below
		if at < 0 || at+1 >= len(s) || !(isAlnum(s[at+1]) || s[at+1] == '[') {
			continue
		}
		colon := strings.IndexByte(s[p+3:at], ':')
		if colon < 0 {
			continue
		}
		pw := p + 3 + colon + 1
		if pw < at && !placeholder(s[pw:at]) {
			add(pw, at)
		}
	}
}

// curlUserRe finds curl's -u/--user user:password argument.
var curlUserRe = regexp.MustCompile(`(?:^|\s)(?:-u|--user)(?:[ \t]+|=)['"]?[^\s:'"]*:([^\s'"]+)`)

// curlUserSpans replaces the password of curl's "-u user:password". Guard:
// "curl" occurs earlier on the same line (other tools use -u for
// user:group, as in "docker run -u 1000:1000"), and the password is not a
// placeholder.
//
// Cost: many matches can share a line. The matches come in order, so the
// start of the current line and the first "curl" on it are kept up to date
// by scans that only move forward, instead of rescanning the line before
// each match.
func curlUserSpans(s string, m *meter, add func(int, int)) {
	m.add(len(s))
	if !strings.Contains(s, "curl") {
		return
	}
	m.add(len(s))
	line := 0    // start of the line holding the match: its '\n', or 0
	scanned := 0 // the text before scanned holds no '\n' after line
	curl := -1   // the first "curl" at or after line, len(s) if none
	for _, x := range curlUserRe.FindAllStringSubmatchIndex(s, -1) {
		if nl := strings.LastIndexByte(s[scanned:x[0]], '\n'); nl >= 0 {
			line = scanned + nl
		}
		m.add(x[0] - scanned + 1)
		scanned = x[0]
		if curl < line {
			// While curl is at or after line it is also the first "curl"
			// on this line: none lies between the line it was searched
			// from and it.
			curl = len(s)
			if i := strings.Index(s[line:], "curl"); i >= 0 {
				curl = line + i
			}
			m.add(curl - line + 1)
		}
		if curl+len("curl") > x[0] {
			continue // no "curl" before the match on its line
		}
		m.add(3 * (x[3] - x[2]))
		if a, b := x[2], x[3]; !placeholder(s[a:b]) {
			add(a, b)
		}
	}
}

// wordStart reports whether a token starting at a begins a word: the byte
// before it is not a letter, digit or '_', or it is the letter of a
// backslash escape (\n, \r, \t), as in JSON-escaped text.
func wordStart(s string, a int) bool {
	if a == 0 || !isWord(s[a-1]) {
		return true
	}
	return escapeLetter(s, a)
}

// escapeLetter reports whether s[a-1] is the letter of a \n, \r or \t
// escape.
func escapeLetter(s string, a int) bool {
	return a >= 2 && s[a-2] == '\\' && strings.IndexByte("nrt", s[a-1]) >= 0
}

func isLetter(c byte) bool     { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isAlnum(c byte) bool      { return isLetter(c) || isDigit(c) }
func isWord(c byte) bool       { return isAlnum(c) || c == '_' }
func isAlnumDash(c byte) bool  { return isAlnum(c) || c == '-' }
func isB64URL(c byte) bool     { return isWord(c) || c == '-' }
func isSpace(c byte) bool      { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func isSchemeChar(c byte) bool { return isAlnum(c) || c == '+' || c == '.' || c == '-' }
func isBearerChar(c byte) bool { return isAlnum(c) || strings.IndexByte("._~+/=-", c) >= 0 }
func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func hasDigit(s string) bool { return strings.ContainsAny(s, "0123456789") }
func hasLetter(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r < utf8.RuneSelf && isLetter(byte(r)) }) >= 0
}

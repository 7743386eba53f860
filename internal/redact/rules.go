package redact

import (
	"encoding/base64"
	"regexp"
	"strings"
	"unicode/utf8"
)

// rule reports the ranges of s it finds through add. Every rule documents
// what it matches, what exactly it replaces, and its false-positive guard.
type rule func(s string, add func(start, end int))

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

func tokenSpans(s string, add func(int, int)) {
	for i := range tokenRules {
		r := &tokenRules[i]
		if r.hints != nil && !containsAny(s, r.hints) {
			continue
		}
		for _, m := range r.re.FindAllStringIndex(s, -1) {
			a, b := m[0], m[1]
			if !wordStart(s, a) || (b < len(s) && r.class(s[b])) {
				continue
			}
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
func bearerSpans(s string, add func(int, int)) {
	if !containsFold(s, "bearer") {
		return
	}
	for _, m := range bearerRe.FindAllStringSubmatchIndex(s, -1) {
		a, b := m[2], m[3]
		if b < len(s) && isBearerChar(s[b]) {
			continue
		}
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
func basicSpans(s string, add func(int, int)) {
	if !containsFold(s, "basic") {
		return
	}
	for _, m := range basicRe.FindAllStringSubmatchIndex(s, -1) {
		a, b := m[2], m[3]
		if b < len(s) && (isAlnum(s[b]) || s[b] == '+' || s[b] == '/' || s[b] == '=') {
			continue
		}
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
func privateKeySpans(s string, add func(int, int)) {
	for _, m := range pemHeaderRe.FindAllStringIndex(s, -1) {
		a, b := m[1], len(s)
		if end := strings.Index(s[a:], "-----END"); end >= 0 {
			b = a + end
		}
		a, b = trimBreaks(s, a, b)
		add(a, b)
	}
}

// trimBreaks narrows [a, b) past leading and trailing whitespace and
// backslash escapes of line breaks and tabs (\n, \r, \t, \\n).
func trimBreaks(s string, a, b int) (int, int) {
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
			return a, b
		}
	}
	return a, b
}

// urlPasswordSpans replaces the password of a URL's userinfo:
// scheme://user:password@host keeps scheme, user and host. Guards: a
// scheme made of URL scheme characters before "://", a colon inside the
// userinfo, a host after '@' (a letter, digit or '['), and a password that
// is not a placeholder (see placeholder). An empty user is allowed
// (https://:token@host).
func urlPasswordSpans(s string, add func(int, int)) {
	for i := 0; ; {
		k := strings.Index(s[i:], "://")
		if k < 0 {
			return
		}
		p := i + k
		i = p + 3
		a := p
		for a > 0 && isSchemeChar(s[a-1]) {
			a--
		}
		for a < p && !isLetter(s[a]) {
			a++
		}
		if a == p {
			continue
		}
		at := -1
		for q := p + 3; q < len(s); q++ {
			c := s[q]
			if c == '@' {
				at = q
				break
			}
			if c <= ' ' || strings.IndexByte("/?#\"'<>\\`", c) >= 0 {
				break
			}
		}
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
func curlUserSpans(s string, add func(int, int)) {
	if !strings.Contains(s, "curl") {
		return
	}
	for _, m := range curlUserRe.FindAllStringSubmatchIndex(s, -1) {
		line := s[:m[0]]
		if nl := strings.LastIndexByte(line, '\n'); nl >= 0 {
			line = line[nl:]
		}
		if !strings.Contains(line, "curl") {
			continue
		}
		if a, b := m[2], m[3]; !placeholder(s[a:b]) {
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

package redact

import "strings"

// secretNames are the key names whose values are credentials. A key
// matches when, normalized (camelCase and '-', '.', ' ' become '_', lower
// case), it equals a name or ends with '_' and the name: "OPENAI_API_KEY",
// "apiKey", "x-api-key", "db.password" and "client_secret" match;
// "max_tokens", "token_count", "password_reset_url" and "secretName" do
// not.
var secretNames = []string{
	"password", "passwd", "passphrase",
	"secret", "client_secret",
	"token",
	"api_key", "apikey",
	"access_key", "secret_key", "private_key",
	"authorization",
}

// notSecretNames are key names that end like a secret name but never hold
// one: pagination and cancellation tokens.
var notSecretNames = []string{
	"page_token", "next_token", "continuation_token", "sync_token", "cancellation_token",
}

// maxKeyLen bounds the key scanned backwards from a separator.
const maxKeyLen = 128

// authSchemes are the authorization schemes kept in front of a redacted
// value: "Authorization: Bearer abc…" keeps "Bearer ".
var authSchemes = []string{"bearer", "basic", "token", "bot", "digest"}

// isSecretKey reports whether a key names a secret (see secretNames).
func isSecretKey(key string) bool {
	if !mayNameSecret(key) {
		return false
	}
	n := normalizeKey(key)
	for _, name := range notSecretNames {
		if nameSuffix(n, name) {
			return false
		}
	}
	for _, name := range secretNames {
		if nameSuffix(n, name) {
			return true
		}
	}
	return false
}

// nameSuffix reports whether the normalized key n is name or ends with '_'
// and name.
func nameSuffix(n, name string) bool {
	return strings.HasSuffix(n, name) && (len(n) == len(name) || n[len(n)-len(name)-1] == '_')
}

// mayNameSecret is a cheap, allocation-free filter for isSecretKey: every
// secret name contains one of these, in any case.
func mayNameSecret(key string) bool {
	for _, frag := range []string{"pass", "secret", "token", "key", "auth"} {
		if containsFold(key, frag) {
			return true
		}
	}
	return false
}

// containsFold reports whether s contains the lower-case ASCII word sub,
// ignoring ASCII case.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i]|0x20 == sub[0] && strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// normalizeKey lower-cases a key and turns its word breaks into '_':
// camelCase boundaries, the end of an acronym ("APIKey" → "api_key"),
// '-', '.' and ' '.
func normalizeKey(k string) string {
	var b strings.Builder
	b.Grow(len(k) + 4)
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c >= 'A' && c <= 'Z':
			if i > 0 {
				p := k[i-1]
				if p >= 'a' && p <= 'z' || isDigit(p) ||
					p >= 'A' && p <= 'Z' && i+1 < len(k) && k[i+1] >= 'a' && k[i+1] <= 'z' {
					b.WriteByte('_')
				}
			}
			b.WriteByte(c + 'a' - 'A')
		case c == '-' || c == '.' || c == ' ':
			b.WriteByte('_')
		default:
			b.WriteByte(c)
		}
	}
	return strings.Trim(b.String(), "_")
}

// valueOK is the guard every key/value rule applies to the value it would
// replace: at least 4 bytes ("x" or "abc" are not credentials worth the
// noise), not a literal (null, none, nil, true, false, undefined), not a
// placeholder (see placeholder), and not already redacted.
func valueOK(v string) bool {
	return len(v) >= 4 && !placeholder(v) && !strings.Contains(v, Marker) && !literal(v)
}

// maxLiteralLen bounds the values literal must lower-case: strings.ToLower
// maps each rune (or invalid byte) to one rune, so a value that lower-cases
// to one of the 9-byte-or-shorter ASCII literals has at most 9 runes of at
// most 4 bytes.
const maxLiteralLen = 4 * len("undefined")

// literal reports whether v, lower-cased, is one of the literals valueOK
// refuses.
func literal(v string) bool {
	if len(v) > maxLiteralLen {
		return false
	}
	switch strings.ToLower(v) {
	case "null", "none", "nil", "true", "false", "undefined":
		return true
	}
	return false
}

// placeholder reports whether v stands for a credential instead of being
// one: already redacted, a variable or template reference ($VAR, ${VAR},
// %VAR%, {{ var }}, <your-key>), one character repeated ("x", "****"), or
// a fill-in word ("YOUR_TOKEN_HERE", "sk-your-key", "replace-me",
// "placeholder", "xxxx…").
func placeholder(v string) bool {
	switch {
	case v == "":
		return true
	case placeholderEnds(v):
		return true
	case strings.Count(v, v[:1]) == len(v):
		return true
	}
	l := strings.ToLower(v)
	for _, w := range fillIns {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// placeholderEnds is the part of placeholder that looks only at the ends
// of v, which is not empty: already redacted, or a reference ($VAR, ${VAR},
// %VAR%, {{ var }}, <your-key>).
func placeholderEnds(v string) bool {
	return strings.HasPrefix(v, Marker) ||
		v[0] == '$' || v[0] == '<' || strings.HasPrefix(v, "{{") ||
		len(v) >= 2 && v[0] == '%' && v[len(v)-1] == '%'
}

// fillIns mark a documentation placeholder; a generated credential holding
// one by chance stays detectable by its vendor shape (tokenRules).
var fillIns = []string{"your", "placeholder", "replace_me", "replace-me", "replaceme", "xxxx"}

// secretValueSpan returns the range of v to replace when v is the value of
// a secret key: all of it, or what follows an authorization scheme
// ("Bearer abc123" → "abc123"), provided it passes valueOK.
func secretValueSpan(v string) (start, end int, ok bool) {
	a := schemeEnd(v)
	if !valueOK(v[a:]) {
		return 0, 0, false
	}
	return a, len(v), true
}

// schemeEnd returns the index after a leading authorization scheme and the
// blanks that follow it, or 0.
func schemeEnd(v string) int {
	for _, sch := range authSchemes {
		if len(v) > len(sch) && strings.EqualFold(v[:len(sch)], sch) && (v[len(sch)] == ' ' || v[len(sch)] == '\t') {
			a := len(sch)
			for a < len(v) && (v[a] == ' ' || v[a] == '\t') {
				a++
			}
			return a
		}
	}
	return 0
}

// keyRef is a key found before a ':' or '=' separator.
type keyRef struct {
	start, end int  // the key itself, without quotes
	quoted     bool // the key is quoted: "password": or 'password'=
	blank      bool // blanks between the key and the separator
	lineStart  bool // the key starts its line (after indentation)
	afterQuote bool // an unquoted key right after a quote: -H "X-Api-Key: …"
}

// keyValueSpans replaces the values of keys that name a secret (see
// isSecretKey), in the forms tool arguments use:
//
//	KEY=value, ?token=value&…, --password=value   (env, query, flags)
//	"password": "value", password = 'value'        (JSON, code; any key, quoted value)
//	"password": 12345                              (JSON-like non-string value)
//	password: value, X-Api-Key: value              (YAML/header line; header inside quotes)
//	password = value                               (INI line)
//
// Only the value is replaced; after an authorization scheme only the
// credentials are. Guards: valueOK on the value; a quoted value is taken
// after any key; an unquoted one after an unquoted key and blanks or a ':'
// only when the key starts its line and the value is the rest of that line
// (or, for a header inside a quoted argument, ends at its closing quote),
// so prose such as "Password: see the instructions" or
// "the token: abc was rotated" and code such as `token = get_token()` are
// left alone; "==", "!=", "<=", ">=", ":=", "::" and "=>" are not
// separators. A line "name = identifier" is still taken, as in an INI file:
// this rule errs towards redacting.
//
// Cost: every separator inside one unquoted run of value bytes
// ("password=password=…") shares the run's end; runs scans each run once
// for all of them, so the rule is linear in s.
func keyValueSpans(s string, m *meter, add func(int, int)) {
	m.add(len(s))
	r := runs{s: s, m: m}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '=' && c != ':' {
			continue
		}
		if i+1 < len(s) && (s[i+1] == '=' || s[i+1] == ':' || c == '=' && s[i+1] == '>') {
			continue
		}
		if i > 0 && strings.IndexByte("=!<>:", s[i-1]) >= 0 {
			continue
		}
		k, ok := keyBefore(s, i, m)
		if !ok || !isSecretKey(s[k.start:k.end]) {
			continue
		}
		if a, b, ok := valueAfter(&r, i+1, c, k); ok {
			add(a, b)
		}
	}
}

// keyBefore finds the key that ends right before the separator at i. The
// key is at most maxKeyLen bytes; the blanks around it belong to this
// separator alone, so walking them is linear over all separators.
func keyBefore(s string, i int, m *meter) (keyRef, bool) {
	var k keyRef
	j := i
	for j > 0 && (s[j-1] == ' ' || s[j-1] == '\t') {
		j--
	}
	k.blank = j < i
	var q byte
	esc := false
	if j > 0 && (s[j-1] == '"' || s[j-1] == '\'') {
		q = s[j-1]
		j--
		if q == '"' && j > 0 && s[j-1] == '\\' {
			esc = true
			j--
		}
	}
	k.end = j
	for j > 0 && isKeyChar(s[j-1]) && !escapeLetter(s, j) && k.end-j <= maxKeyLen {
		j--
	}
	m.add(i - j + 1)
	if j == k.end || k.end-j > maxKeyLen {
		return k, false
	}
	m.add(2 * (k.end - j)) // isSecretKey reads the key
	k.start = j
	if q != 0 {
		if j == 0 || s[j-1] != q {
			return k, false
		}
		j--
		if esc {
			if j == 0 || s[j-1] != '\\' {
				return k, false
			}
			j--
		}
		k.quoted = true
	} else {
		k.afterQuote = j > 0 && (s[j-1] == '"' || s[j-1] == '\'')
	}
	k.lineStart = lineStart(s, j, m)
	return k, true
}

// valueAfter finds the value that starts after the separator sep, whose
// first byte after it is at p, in the text of r.
func valueAfter(r *runs, p int, sep byte, k keyRef) (int, int, bool) {
	s, m := r.s, r.m
	a := p
	for a < len(s) && (s[a] == ' ' || s[a] == '\t') {
		a++
	}
	m.add(a - p + 1)
	if a >= len(s) {
		return 0, 0, false
	}
	if s[a] == '"' || s[a] == '\'' || s[a] == '\\' && a+1 < len(s) && s[a+1] == '"' {
		a, b := quotedBody(s, a, m)
		v := s[a:b]
		x, y, ok := secretValueSpan(v)
		m.add(3 * len(v))
		return a + x, a + y, ok
	}
	// Which unquoted forms are taken, and where their value must end.
	tight := sep == '=' && !k.blank && a == p
	anyEnd, quoteEnd := false, false
	switch {
	case tight, k.quoted: // KEY=value, "key": value
		anyEnd = true
	case sep == ':' && k.afterQuote: // -H "X-Api-Key: value"
		quoteEnd = true
	case k.lineStart: // key: value, key = value: the rest of the line
	default:
		return 0, 0, false
	}
	b := r.runEnd(a)
	if b < len(s) && (s[b] == ' ' || s[b] == '\t') && schemeEnd(s[a:b+1]) == b-a+1 {
		// The run is a scheme word alone ("Bearer"), so no other
		// separator shares these blanks.
		c := b
		for c < len(s) && (s[c] == ' ' || s[c] == '\t') {
			c++
		}
		m.add(c - b + 1)
		if e := r.runEnd(c); e > c {
			a, b = c, e
		}
	}
	if !anyEnd && !lineEnd(s, b, quoteEnd, m) {
		return 0, 0, false
	}
	if !r.valueOK(a, b) {
		return 0, 0, false
	}
	return a, b, true
}

// runs answers runEnd and valueOK for the unquoted values of one text s.
//
// Every separator inside one run of value bytes shares the run's end:
// "password=password=…" has a separator every 9 bytes and one run to the
// end of the text, so calling runEnd, then valueOK, from each separator
// would cost the square of the text's length. runs scans a run once, from
// the first start asked, and answers every later start inside it from that
// scan; and it answers valueOK for every value ending where the run ends
// from facts about the run gathered in one more pass. Callers ask with
// non-decreasing starts (keyValueSpans and flagSpans move forward), which
// makes every fresh scan start past the previous run: the total is linear.
// Any order gives the same answers, only slower.
type runs struct {
	s string
	m *meter

	start, end int // the run scanned last: runEnd(s, start) == end

	// Facts about s[start:end], each gathered when valueOK first needs it.
	facts  uint8 // which of the facts below are gathered
	same   int   // the least i >= start with s[i:end] one byte repeated
	fill   int   // start of the last fill-in word (any case) in s[start:end], or -1
	marker int   // start of the last Marker in s[start:end], or -1
}

// The facts of runs.
const (
	factSame uint8 = 1 << iota
	factFill
	factMarker
)

// runEnd returns runEnd(r.s, a).
func (r *runs) runEnd(a int) int {
	if r.start <= a && a < r.end {
		// The scan from start passed a, so it ends the same way, unless a
		// is inside a Marker the scan stepped over whole: from inside, the
		// run ends at that Marker's ']'. Markers do not overlap, so the
		// last '[' within a Marker's length before a is the only candidate.
		lo := max(r.start, a-(len(Marker)-1))
		r.m.add(a - lo + 1)
		if i := strings.LastIndexByte(r.s[lo:a], '['); i >= 0 && strings.HasPrefix(r.s[lo+i:], Marker) {
			return lo + i + len(Marker) - 1
		}
		return r.end
	}
	e := runEnd(r.s, a, r.m)
	r.start, r.end, r.facts = a, e, 0
	return e
}

// valueOK returns valueOK(r.s[a:b]); a value ending where the last run
// scanned ends is judged from the facts about that run.
func (r *runs) valueOK(a, b int) bool {
	if b != r.end || a < r.start {
		r.m.add(5 * (b - a))
		return valueOK(r.s[a:b])
	}
	v := r.s[a:b]
	switch {
	case len(v) < 4, placeholderEnds(v), literal(v):
		return false
	case a >= r.fact(factSame): // strings.Count(v, v[:1]) == len(v) in placeholder
		return false
	case a <= r.fact(factFill): // a fill-in word in placeholder
		return false
	case a <= r.fact(factMarker): // strings.Contains(v, Marker)
		return false
	}
	return true
}

// fact returns a fact about s[start:end], gathering it first if need be.
// The fill-in words are ASCII without 'i' or 'k', the only ASCII letters
// strings.ToLower makes of other runes (U+0130 and U+212A), so matching them
// under ASCII case folding is what placeholder's strings.ToLower and
// strings.Contains find (TestFillInsFoldASCII).
func (r *runs) fact(f uint8) int {
	run := r.s[r.start:r.end]
	if r.facts&f == 0 {
		r.facts |= f
		switch f {
		case factSame:
			r.m.add(len(run) + 1)
			r.same = r.end
			if len(run) > 0 {
				r.same--
				for r.same > r.start && r.s[r.same-1] == r.s[r.end-1] {
					r.same--
				}
			}
		case factFill:
			r.m.add((len(fillIns) + 1) * (len(run) + 1))
			r.fill = -1
			lower := asciiLower(run)
			for _, w := range fillIns {
				if i := strings.LastIndex(lower, w); i >= 0 {
					r.fill = max(r.fill, r.start+i)
				}
			}
		case factMarker:
			r.m.add(len(run) + 1)
			r.marker = -1
			if i := strings.LastIndex(run, Marker); i >= 0 {
				r.marker = r.start + i
			}
		}
	}
	switch f {
	case factSame:
		return r.same
	case factFill:
		return r.fill
	}
	return r.marker
}

// asciiLower returns s with its ASCII upper-case letters lower-cased and
// every other byte kept.
func asciiLower(s string) string {
	i := 0
	for i < len(s) && !(s[i] >= 'A' && s[i] <= 'Z') {
		i++
	}
	if i == len(s) {
		return s
	}
	b := []byte(s)
	for ; i < len(b); i++ {
		if b[i] >= 'A' && b[i] <= 'Z' {
			b[i] += 'a' - 'A'
		}
	}
	return string(b)
}

// quotedBody returns the range of the quoted value starting at a (a quote
// or an escaped \" quote), up to its closing quote, or to the end of the
// line when it is not closed.
//
// Cost: a value's opening quote follows its separator or a blank, never a
// backslash, so the scan for a closing quote of the same kind stops at the
// next value's opening quote at the latest: bodies of one kind of quote do
// not overlap, and their scans add up to at most the text, once per kind.
// Only the last opening \" can find no closing one.
func quotedBody(s string, a int, m *meter) (int, int) {
	if s[a] == '\\' {
		a += 2
		if i := strings.Index(s[a:], `\"`); i >= 0 {
			m.add(i + 2)
			return a, a + i
		}
		e := lineEndIndex(s, a)
		m.add(len(s) - a + e - a)
		return a, e
	}
	q := s[a]
	a++
	for i := a; i < len(s); i++ {
		switch {
		case s[i] == '\\' && q == '"':
			i++
		case s[i] == q, s[i] == '\n':
			m.add(i - a + 1)
			return a, i
		}
	}
	m.add(len(s) - a + 1)
	return a, len(s)
}

// queryParam reports whether a query parameter name and '=' start at a.
// The name ends at the next '&' at the latest, so the runEnd scan that asks
// at each '&' reads every byte of its run at most twice.
func queryParam(s string, a int, m *meter) bool {
	e := a
	for e < len(s) && isKeyChar(s[e]) {
		e++
	}
	m.add(e - a + 1)
	return e > a && e < len(s) && s[e] == '='
}

// lineEndIndex is the index of the first line break at or after a.
func lineEndIndex(s string, a int) int {
	if i := strings.IndexByte(s[a:], '\n'); i >= 0 {
		return a + i
	}
	return len(s)
}

// runEnd returns the end of an unquoted value starting at a: it stops at a
// blank or control byte, a quote, a backslash, one of ; , ) } ] ` or an '&'
// that starts the next query parameter ("&format=json"); any other '&' is
// part of the value, as in an env file.
// A Marker inside the run is taken whole, so a value redacted before is
// seen as such and not redacted again up to its ']'.
//
// It scans the whole run: callers that ask from many starts in one run go
// through runs.
func runEnd(s string, a int, m *meter) int {
	from := a
	for a < len(s) {
		if strings.HasPrefix(s[a:], Marker) {
			a += len(Marker)
			continue
		}
		if s[a] <= ' ' || strings.IndexByte("\"'\\;,)}]`", s[a]) >= 0 || s[a] == '&' && queryParam(s, a+1, m) {
			break
		}
		a++
	}
	m.add(a - from + 1)
	return a
}

// lineEnd reports whether only blanks separate b from the end of its line
// (a real line break, an escaped \n or \r, or the end of the text) or,
// when quoteOK, from the quote that closes the argument it is in.
//
// Only separators whose value must end its line ask, and their runs do not
// share an end, so the blanks walked are walked once.
func lineEnd(s string, b int, quoteOK bool, m *meter) bool {
	from := b
	for b < len(s) && (s[b] == ' ' || s[b] == '\t') {
		b++
	}
	m.add(b - from + 1)
	if b == len(s) {
		return true
	}
	switch s[b] {
	case '\n', '\r':
		return true
	case '"', '\'':
		return quoteOK
	case '\\':
		return b+1 < len(s) && (s[b+1] == 'n' || s[b+1] == 'r' || quoteOK && s[b+1] == '"')
	}
	return false
}

// lineStart reports whether only blanks separate j from the start of its
// line (a real line break or an escaped \n).
func lineStart(s string, j int, m *meter) bool {
	from := j
	for j > 0 && (s[j-1] == ' ' || s[j-1] == '\t') {
		j--
	}
	m.add(from - j + 1)
	return j == 0 || s[j-1] == '\n' || s[j-1] == '\r' || j >= 2 && s[j-2] == '\\' && (s[j-1] == 'n' || s[j-1] == 'r')
}

func isKeyChar(c byte) bool { return isWord(c) || c == '-' || c == '.' }

// flagSpans replaces the value of a long flag that names a secret and takes
// its value as the next argument: "--password hunter2", "--api-key 'x…'".
// Guards: the flag starts a word of a command line; the value does not
// start with '-' (the next flag); valueOK on the value.
//
// Cost: a flag starts after a byte that is not a key character (or after
// the letter of an escape, after a backslash), so the scans of flag names
// and of their values do not overlap.
func flagSpans(s string, m *meter, add func(int, int)) {
	r := runs{s: s, m: m}
	for i := 0; ; {
		k := strings.Index(s[i:], "--")
		if k < 0 {
			m.add(len(s) - i + 1)
			return
		}
		m.add(k + 2)
		p := i + k
		i = p + 2
		if p > 0 && !(isSpace(s[p-1]) || s[p-1] == '"' || s[p-1] == '\'' || escapeLetter(s, p)) {
			continue
		}
		e := i
		for e < len(s) && isKeyChar(s[e]) {
			e++
		}
		m.add(3 * (e - i + 1)) // and isSecretKey
		if e == i || e >= len(s) || (s[e] != ' ' && s[e] != '\t') || !isSecretKey(s[i:e]) {
			continue
		}
		a := e
		for a < len(s) && (s[a] == ' ' || s[a] == '\t') {
			a++
		}
		m.add(a - e + 1)
		if a >= len(s) || s[a] == '-' {
			continue
		}
		var b int
		var ok bool
		if s[a] == '"' || s[a] == '\'' || s[a] == '\\' && a+1 < len(s) && s[a+1] == '"' {
			a, b = quotedBody(s, a, m)
			ok = valueOK(s[a:b])
			m.add(5 * (b - a))
		} else {
			b = r.runEnd(a)
			ok = r.valueOK(a, b)
		}
		if ok {
			add(a, b)
		}
	}
}

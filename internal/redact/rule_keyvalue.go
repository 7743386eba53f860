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
	if len(v) < 4 || placeholder(v) || strings.Contains(v, Marker) {
		return false
	}
	switch strings.ToLower(v) {
	case "null", "none", "nil", "true", "false", "undefined":
		return false
	}
	return true
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
	case strings.HasPrefix(v, Marker):
		return true
	case v[0] == '$' || v[0] == '<' || strings.HasPrefix(v, "{{"):
		return true
	case len(v) >= 2 && v[0] == '%' && v[len(v)-1] == '%':
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
func keyValueSpans(s string, add func(int, int)) {
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
		k, ok := keyBefore(s, i)
		if !ok || !isSecretKey(s[k.start:k.end]) {
			continue
		}
		if a, b, ok := valueAfter(s, i+1, c, k); ok {
			add(a, b)
		}
	}
}

// keyBefore finds the key that ends right before the separator at i.
func keyBefore(s string, i int) (keyRef, bool) {
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
	if j == k.end || k.end-j > maxKeyLen {
		return k, false
	}
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
	k.lineStart = lineStart(s, j)
	return k, true
}

// valueAfter finds the value that starts after the separator sep, whose
// first byte after it is at p.
func valueAfter(s string, p int, sep byte, k keyRef) (int, int, bool) {
	a := p
	for a < len(s) && (s[a] == ' ' || s[a] == '\t') {
		a++
	}
	if a >= len(s) {
		return 0, 0, false
	}
	if s[a] == '"' || s[a] == '\'' || s[a] == '\\' && a+1 < len(s) && s[a+1] == '"' {
		a, b := quotedBody(s, a)
		v := s[a:b]
		x, y, ok := secretValueSpan(v)
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
	b := runEnd(s, a)
	if b < len(s) && (s[b] == ' ' || s[b] == '\t') && schemeEnd(s[a:b+1]) == b-a+1 {
		c := b
		for c < len(s) && (s[c] == ' ' || s[c] == '\t') {
			c++
		}
		if e := runEnd(s, c); e > c {
			a, b = c, e
		}
	}
	if !anyEnd && !lineEnd(s, b, quoteEnd) {
		return 0, 0, false
	}
	if !valueOK(s[a:b]) {
		return 0, 0, false
	}
	return a, b, true
}

// quotedBody returns the range of the quoted value starting at a (a quote
// or an escaped \" quote), up to its closing quote, or to the end of the
// line when it is not closed.
func quotedBody(s string, a int) (int, int) {
	if s[a] == '\\' {
		a += 2
		if i := strings.Index(s[a:], `\"`); i >= 0 {
			return a, a + i
		}
		return a, lineEndIndex(s, a)
	}
	q := s[a]
	a++
	for i := a; i < len(s); i++ {
		switch {
		case s[i] == '\\' && q == '"':
			i++
		case s[i] == q, s[i] == '\n':
			return a, i
		}
	}
	return a, len(s)
}

// queryParam reports whether a query parameter name and '=' start at a.
func queryParam(s string, a int) bool {
	e := a
	for e < len(s) && isKeyChar(s[e]) {
		e++
	}
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
func runEnd(s string, a int) int {
	for a < len(s) {
		if strings.HasPrefix(s[a:], Marker) {
			a += len(Marker)
			continue
		}
		if s[a] <= ' ' || strings.IndexByte("\"'\\;,)}]`", s[a]) >= 0 || s[a] == '&' && queryParam(s, a+1) {
			break
		}
		a++
	}
	return a
}

// lineEnd reports whether only blanks separate b from the end of its line
// (a real line break, an escaped \n or \r, or the end of the text) or,
// when quoteOK, from the quote that closes the argument it is in.
func lineEnd(s string, b int, quoteOK bool) bool {
	for b < len(s) && (s[b] == ' ' || s[b] == '\t') {
		b++
	}
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
func lineStart(s string, j int) bool {
	for j > 0 && (s[j-1] == ' ' || s[j-1] == '\t') {
		j--
	}
	return j == 0 || s[j-1] == '\n' || s[j-1] == '\r' || j >= 2 && s[j-2] == '\\' && (s[j-1] == 'n' || s[j-1] == 'r')
}

func isKeyChar(c byte) bool { return isWord(c) || c == '-' || c == '.' }

// flagSpans replaces the value of a long flag that names a secret and takes
// its value as the next argument: "--password hunter2", "--api-key 'x…'".
// Guards: the flag starts a word of a command line; the value does not
// start with '-' (the next flag); valueOK on the value.
func flagSpans(s string, add func(int, int)) {
	for i := 0; ; {
		k := strings.Index(s[i:], "--")
		if k < 0 {
			return
		}
		p := i + k
		i = p + 2
		if p > 0 && !(isSpace(s[p-1]) || s[p-1] == '"' || s[p-1] == '\'' || escapeLetter(s, p)) {
			continue
		}
		e := i
		for e < len(s) && isKeyChar(s[e]) {
			e++
		}
		if e == i || e >= len(s) || (s[e] != ' ' && s[e] != '\t') || !isSecretKey(s[i:e]) {
			continue
		}
		a := e
		for a < len(s) && (s[a] == ' ' || s[a] == '\t') {
			a++
		}
		if a >= len(s) || s[a] == '-' {
			continue
		}
		var b int
		if s[a] == '"' || s[a] == '\'' || s[a] == '\\' && a+1 < len(s) && s[a+1] == '"' {
			a, b = quotedBody(s, a)
		} else {
			b = runEnd(s, a)
		}
		if valueOK(s[a:b]) {
			add(a, b)
		}
	}
}

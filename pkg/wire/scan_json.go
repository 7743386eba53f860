package wire

import (
	"encoding/json"
	"unicode/utf8"
)

// jsonFrame is one open array or object of a JSON pre-pass.
type jsonFrame struct {
	shape  *shape
	obj    bool
	n      int    // arrays: index of the current element
	key    []byte // objects: the current member's key, decoded
	hasKey bool
	keys   keySet // strict objects: keys seen
}

// jsonScanner is the iterative pre-pass over one JSON document.
type jsonScanner struct {
	data   []byte
	pos    int
	lim    ScanLimits
	strict bool
	elems  int
	stack  []jsonFrame
}

// scanJSON checks that data is exactly one JSON value within lim, with no
// recursion: the open containers live on an explicit stack of at most
// lim.MaxDepth frames. root is the shape of the decode target. When strict,
// it also rejects invalid UTF-8 and unpaired surrogate escapes, duplicate
// keys, and keys that name no field of a struct shape exactly.
func scanJSON(data []byte, root *shape, lim ScanLimits, strict bool) error {
	if len(data) > lim.MaxBytes {
		return tooBig(len(data), lim.MaxBytes)
	}
	s := &jsonScanner{data: data, lim: lim, strict: strict}
	return s.run(root)
}

const (
	wantValue = iota
	wantKey
	afterValue
)

func (s *jsonScanner) run(root *shape) error {
	sh := root
	state := wantValue
	s.ws()
	for {
		switch state {
		case wantValue:
			if s.pos >= len(s.data) {
				return s.syntax("unexpected end of JSON input")
			}
			s.elems++
			if s.elems > s.lim.MaxElements {
				return tooMany(s.path(), s.lim.MaxElements)
			}
			switch c := s.data[s.pos]; c {
			case '{', '[':
				if len(s.stack) >= s.lim.MaxDepth {
					return tooDeep(s.path(), s.lim.MaxDepth)
				}
				s.pos++
				s.push(sh, c == '{')
				s.ws()
				end := byte(']')
				if c == '{' {
					end = '}'
				}
				switch {
				case s.pos < len(s.data) && s.data[s.pos] == end:
					s.pos++
					s.stack = s.stack[:len(s.stack)-1]
					state = afterValue
				case c == '{':
					state = wantKey
				default:
					sh = sh.element()
				}
			case '"':
				if _, err := s.str(false); err != nil {
					return err
				}
				state = afterValue
			case 't':
				if err := s.literal("true"); err != nil {
					return err
				}
				state = afterValue
			case 'f':
				if err := s.literal("false"); err != nil {
					return err
				}
				state = afterValue
			case 'n':
				if err := s.literal("null"); err != nil {
					return err
				}
				state = afterValue
			default:
				if err := s.number(); err != nil {
					return err
				}
				state = afterValue
			}

		case wantKey:
			top := &s.stack[len(s.stack)-1]
			top.hasKey = false
			if s.pos >= len(s.data) || s.data[s.pos] != '"' {
				return s.syntax("expected a string key")
			}
			key, err := s.str(true)
			if err != nil {
				return err
			}
			top.key, top.hasKey = key, true
			if s.strict {
				if !top.keys.add(key) {
					return invalid(ReasonMalformed, s.path(), "duplicate key")
				}
				m, ok := top.shape.member(key)
				if !ok {
					return unknownField(s.path(), top.shape, key)
				}
				sh = m
			} else {
				sh = anyShape
			}
			s.ws()
			if s.pos >= len(s.data) || s.data[s.pos] != ':' {
				return s.syntax("expected ':' after an object key")
			}
			s.pos++
			s.ws()
			state = wantValue

		case afterValue:
			s.ws()
			if len(s.stack) == 0 {
				if s.pos != len(s.data) {
					return s.syntax("trailing data after the JSON value")
				}
				return nil
			}
			top := &s.stack[len(s.stack)-1]
			if s.pos >= len(s.data) {
				return s.syntax("unexpected end of JSON input")
			}
			switch c := s.data[s.pos]; {
			case c == ',':
				s.pos++
				s.ws()
				if top.obj {
					state = wantKey
				} else {
					top.n++
					sh = top.shape.element()
					state = wantValue
				}
			case c == '}' && top.obj, c == ']' && !top.obj:
				s.pos++
				s.stack = s.stack[:len(s.stack)-1]
			default:
				return s.syntax("expected ',' or the end of the container")
			}
		}
	}
}

func (s *jsonScanner) push(sh *shape, obj bool) {
	if len(s.stack) < cap(s.stack) {
		s.stack = s.stack[:len(s.stack)+1]
		f := &s.stack[len(s.stack)-1]
		keys := f.keys
		keys.reset()
		*f = jsonFrame{shape: sh, obj: obj, keys: keys}
		return
	}
	s.stack = append(s.stack, jsonFrame{shape: sh, obj: obj})
}

func (s *jsonScanner) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *jsonScanner) literal(lit string) error {
	if len(s.data)-s.pos < len(lit) || string(s.data[s.pos:s.pos+len(lit)]) != lit {
		return s.syntax("invalid literal")
	}
	s.pos += len(lit)
	return nil
}

// number scans -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *jsonScanner) number() error {
	d := s.data
	if s.pos < len(d) && d[s.pos] == '-' {
		s.pos++
	}
	switch {
	case s.pos < len(d) && d[s.pos] == '0':
		s.pos++
	case s.pos < len(d) && '1' <= d[s.pos] && d[s.pos] <= '9':
		s.digits()
	default:
		return s.syntax("invalid character")
	}
	if s.pos < len(d) && d[s.pos] == '.' {
		s.pos++
		if s.digits() == 0 {
			return s.syntax("invalid number")
		}
	}
	if s.pos < len(d) && (d[s.pos] == 'e' || d[s.pos] == 'E') {
		s.pos++
		if s.pos < len(d) && (d[s.pos] == '+' || d[s.pos] == '-') {
			s.pos++
		}
		if s.digits() == 0 {
			return s.syntax("invalid number")
		}
	}
	return nil
}

func (s *jsonScanner) digits() int {
	start := s.pos
	for s.pos < len(s.data) && '0' <= s.data[s.pos] && s.data[s.pos] <= '9' {
		s.pos++
	}
	return s.pos - start
}

// str scans the string at s.pos (its opening quote). For a key it returns
// the decoded key: the input itself when it has no escapes.
func (s *jsonScanner) str(isKey bool) ([]byte, error) {
	d := s.data
	start := s.pos + 1
	escaped := false
	for i := start; i < len(d); {
		c := d[i]
		switch {
		case c == '"':
			s.pos = i + 1
			if !isKey {
				return nil, nil
			}
			if !escaped {
				return d[start:i], nil
			}
			var k string
			if err := json.Unmarshal(d[start-1:i+1], &k); err != nil {
				return nil, s.syntaxAt(start-1, "invalid string")
			}
			return []byte(k), nil
		case c == '\\':
			escaped = true
			if i+1 >= len(d) {
				return nil, s.syntaxAt(i, "unexpected end of JSON input")
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				r, ok := hex4(d, i+2)
				if !ok {
					return nil, s.syntaxAt(i, "invalid \\u escape")
				}
				i += 6
				if !s.strict || r < 0xd800 || r > 0xdfff {
					continue
				}
				if r >= 0xdc00 {
					return nil, s.invalidText(isKey, "unpaired surrogate escape")
				}
				if i+1 < len(d) && d[i] == '\\' && d[i+1] == 'u' {
					if r2, ok := hex4(d, i+2); ok && r2 >= 0xdc00 && r2 <= 0xdfff {
						i += 6
						continue
					}
				}
				return nil, s.invalidText(isKey, "unpaired surrogate escape")
			default:
				return nil, s.syntaxAt(i, "invalid escape")
			}
		case c < 0x20:
			return nil, s.syntaxAt(i, "control character in string")
		case c < utf8.RuneSelf:
			i++
		default:
			if !s.strict {
				i++
				continue
			}
			r, size := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && size == 1 {
				return nil, s.invalidText(isKey, "not valid UTF-8")
			}
			i += size
		}
	}
	return nil, s.syntaxAt(len(d), "unexpected end of JSON input")
}

func hex4(d []byte, i int) (rune, bool) {
	if len(d)-i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range d[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// invalidText reports bad text in a string value (named by the path) or in
// a key (named by its parent's path).
func (s *jsonScanner) invalidText(isKey bool, detail string) *ValidationError {
	if isKey {
		top := &s.stack[len(s.stack)-1]
		top.hasKey = false
		return invalid(ReasonMalformed, s.path(), "object key %s", detail)
	}
	return invalid(ReasonMalformed, s.path(), "%s", detail)
}

func (s *jsonScanner) syntax(msg string) *ValidationError { return s.syntaxAt(s.pos, msg) }

func (s *jsonScanner) syntaxAt(off int, msg string) *ValidationError {
	return invalid(ReasonMalformed, s.path(), "invalid JSON at offset %d: %s", off, msg)
}

// path names the value being scanned.
func (s *jsonScanner) path() string {
	var p pathBuilder
	for i := range s.stack {
		f := &s.stack[i]
		switch {
		case !f.obj:
			p.index(f.n)
		case f.hasKey:
			p.key(f.key)
		}
	}
	return p.String()
}

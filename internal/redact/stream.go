package redact

import "strings"

// Stream redacts one tool call's JSON arguments as they arrive in
// fragments. The concatenation of everything Write and Close return is
// exactly RedactJSON of the concatenated fragments, however they are split
// (inside a key, an escape or a credential), and no returned text ever
// holds a credential RedactJSON would replace.
//
// Structure outside strings (punctuation, whitespace, container openers
// and closers) is returned as soon as it arrives. A scalar is held back
// until it is complete, together with the key it belongs to, because a
// credential is only recognised whole and in its context. What a Stream
// holds is therefore bounded by one object member (its key, the colon and
// a string, number or literal value) or one array element scalar, while
// the input is JSON; a long string value is held whole. Once the input
// stops being JSON, everything from the start of the member or element the
// grammar broke in is held until Close and redacted there as text (text
// redaction cannot be decided before the text ends); so is a member left
// unfinished at Close, an unterminated string for instance.
//
// A Stream is not safe for concurrent use. The zero value is ready to use.
// Write after Close returns "" and ignores its fragment.
type Stream struct {
	st    state
	stack []frame

	// pend holds the member or element being read: from the opening quote
	// of its key (objects) or the first byte of its value (arrays, top
	// level). pendOn tells whether pend is in use.
	pend   []byte
	pendOn bool
	keyEnd int // end of the key string in pend, 0 when there is no key
	valAt  int // start of the value in pend

	keyName   string // the current member's key, decoded
	keySecret bool   // the current member's key names a secret
	valSecret bool   // the value being read is the value of a secret key
	inKey     bool   // the string being read is an object key
	hexLeft   int    // hex digits left in a \uXXXX escape
	lit       string

	text []byte // once the input is not JSON: everything from the break

	out      []byte
	redacted bool
	closed   bool

	m *meter // counts the work, for the linearity tests; nil otherwise
}

// frame is one open container.
type frame struct {
	obj    bool // an object, else an array
	secret bool // an array whose elements are values of a secret key
	// flagNext: the previous element of this array was a flag naming a
	// secret ("--password"), so the next one is its value (argv arrays).
	flagNext bool
	// nameSecret: an earlier "name" or "key" member of this object names a
	// secret ({"name": "DB_PASSWORD", "value": …}), so its "value" member
	// is one.
	nameSecret bool
}

// state is what the scanner expects next. The grammar is encoding/json's.
type state uint8

const (
	stValue        state = iota // a value (top level, after ':' or ',' in an array)
	stValueOrClose              // a value or ']' (after '[')
	stKeyOrClose                // a key or '}' (after '{')
	stKey                       // a key (after ',' in an object)
	stColon                     // ':' after a key
	stAfterValue                // ',' or the container's closer
	stTopEnd                    // only whitespace after the top-level value
	stString                    // inside a string
	stEscape                    // after '\' in a string
	stHex                       // inside \uXXXX
	stMinus                     // number: after '-'
	stZero                      // number: after a leading 0
	stInt                       // number: in the integer digits
	stDot                       // number: after '.'
	stFrac                      // number: in the fraction digits
	stExp                       // number: after 'e'
	stExpSign                   // number: after the exponent's sign
	stExpDigits                 // number: in the exponent digits
	stLiteral                   // in true, false or null
	stText                      // not JSON: everything goes to text
)

// NewStream returns a Stream for one tool call's arguments.
func NewStream() *Stream {
	return &Stream{}
}

// Write takes the next fragment and returns the redacted text that is safe
// to emit now, possibly empty. After Close it returns "" and ignores the
// fragment.
func (s *Stream) Write(fragment string) string {
	if s.closed {
		return ""
	}
	for i := 0; i < len(fragment); i++ {
		s.step(fragment[i])
	}
	s.m.add(len(fragment))
	return s.flushOut()
}

// Close flushes what Write held back, redacted, and ends the stream.
// Calling it again returns "".
func (s *Stream) Close() string {
	if s.closed {
		return ""
	}
	s.closed = true
	switch {
	case s.st == stText:
		s.emitText(string(s.text))
		s.text = nil
	case s.st == stZero || s.st == stInt || s.st == stFrac || s.st == stExpDigits:
		s.flushMember()
	case s.pendOn:
		s.emitText(string(s.pend))
	}
	s.pend, s.pendOn = nil, false
	return s.flushOut()
}

// Redacted reports whether anything returned so far was redacted.
func (s *Stream) Redacted() bool { return s.redacted }

func (s *Stream) flushOut() string {
	out := string(s.out)
	s.out = s.out[:0]
	return out
}

func (s *Stream) emitText(t string) {
	r, changed := redactText(t, s.m)
	s.out = append(s.out, r...)
	s.redacted = s.redacted || changed
}

// step advances the scanner by one byte.
func (s *Stream) step(c byte) {
	switch s.st {
	case stText:
		s.text = append(s.text, c)

	case stString:
		switch {
		case c == '"':
			s.pend = append(s.pend, c)
			s.endString()
		case c == '\\':
			s.pend = append(s.pend, c)
			s.st = stEscape
		case c < 0x20:
			s.broken(c)
		default:
			s.pend = append(s.pend, c)
		}
	case stEscape:
		switch c {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			s.pend = append(s.pend, c)
			s.st = stString
		case 'u':
			s.pend = append(s.pend, c)
			s.st, s.hexLeft = stHex, 4
		default:
			s.broken(c)
		}
	case stHex:
		if !isHex(c) {
			s.broken(c)
			return
		}
		s.pend = append(s.pend, c)
		if s.hexLeft--; s.hexLeft == 0 {
			s.st = stString
		}

	case stMinus, stZero, stInt, stDot, stFrac, stExp, stExpSign, stExpDigits:
		s.number(c)
	case stLiteral:
		n := len(s.pend) - s.valAt
		if c != s.lit[n] {
			s.broken(c)
			return
		}
		s.pend = append(s.pend, c)
		if n+1 == len(s.lit) {
			s.flushMember()
			s.afterValue()
		}

	case stValue, stValueOrClose:
		switch {
		case isSpace(c):
			s.blank(c)
		case c == ']' && s.st == stValueOrClose:
			s.closeContainer(c)
		default:
			s.beginValue(c)
		}
	case stKeyOrClose, stKey:
		switch {
		case isSpace(c):
			s.out = append(s.out, c)
		case c == '}' && s.st == stKeyOrClose:
			s.closeContainer(c)
		case c == '"':
			s.pend = append(s.pend[:0], c)
			s.pendOn, s.keyEnd, s.inKey = true, 0, true
			s.st = stString
		default:
			s.broken(c)
		}
	case stColon:
		switch {
		case isSpace(c):
			s.pend = append(s.pend, c)
		case c == ':':
			s.pend = append(s.pend, c)
			s.st = stValue
		default:
			s.broken(c)
		}
	case stAfterValue:
		top := s.stack[len(s.stack)-1]
		switch {
		case isSpace(c):
			s.out = append(s.out, c)
		case c == ',':
			s.out = append(s.out, c)
			if top.obj {
				s.st = stKey
			} else {
				s.st = stValue
			}
		case c == '}' && top.obj, c == ']' && !top.obj:
			s.closeContainer(c)
		default:
			s.broken(c)
		}
	case stTopEnd:
		if isSpace(c) {
			s.out = append(s.out, c)
		} else {
			s.broken(c)
		}
	}
}

// blank handles whitespace where a value is expected: it belongs to the
// held member after a key, and is emitted otherwise.
func (s *Stream) blank(c byte) {
	if s.pendOn {
		s.pend = append(s.pend, c)
	} else {
		s.out = append(s.out, c)
	}
}

// beginValue handles the first byte of a value.
func (s *Stream) beginValue(c byte) {
	secret := false
	if n := len(s.stack); n > 0 {
		if top := &s.stack[n-1]; top.obj {
			secret = s.keySecret || top.nameSecret && strings.EqualFold(s.keyName, "value")
		} else {
			secret = top.secret || top.flagNext
			top.flagNext = false
		}
	}
	if c == '{' || c == '[' {
		// The key and colon before a container are complete: emit them.
		if s.pendOn {
			s.out = append(s.out, s.keyText()...)
			s.out = append(s.out, s.pend[s.keyEnd:]...)
			s.pend, s.pendOn = s.pend[:0], false
		}
		s.out = append(s.out, c)
		s.stack = append(s.stack, frame{obj: c == '{', secret: c == '[' && secret})
		if c == '{' {
			s.st = stKeyOrClose
		} else {
			s.st = stValueOrClose
		}
		return
	}
	if !s.pendOn {
		s.pend, s.pendOn, s.keyEnd = s.pend[:0], true, 0
	}
	s.valAt, s.valSecret, s.inKey = len(s.pend), secret, false
	switch {
	case c == '"':
		s.st = stString
	case c == '-':
		s.st = stMinus
	case c == '0':
		s.st = stZero
	case c >= '1' && c <= '9':
		s.st = stInt
	case c == 't':
		s.st, s.lit = stLiteral, "true"
	case c == 'f':
		s.st, s.lit = stLiteral, "false"
	case c == 'n':
		s.st, s.lit = stLiteral, "null"
	default:
		s.broken(c)
		return
	}
	s.pend = append(s.pend, c)
}

// endString handles the closing quote of a key or a string value.
func (s *Stream) endString() {
	if s.inKey {
		s.keyEnd = len(s.pend)
		s.keyName = decode(string(s.pend[1 : s.keyEnd-1])).text
		s.keySecret = isSecretKey(s.keyName)
		s.m.add(2 * s.keyEnd)
		s.st = stColon
		return
	}
	s.flushMember()
	s.afterValue()
}

// number advances a number by c, or ends it and hands c on.
func (s *Stream) number(c byte) {
	digit := c >= '0' && c <= '9'
	next := s.st
	switch s.st {
	case stMinus:
		switch {
		case c == '0':
			next = stZero
		case digit:
			next = stInt
		default:
			s.broken(c)
			return
		}
	case stZero, stInt:
		switch {
		case digit && s.st == stInt:
		case c == '.':
			next = stDot
		case c == 'e' || c == 'E':
			next = stExp
		default:
			s.endNumber(c)
			return
		}
	case stDot, stFrac:
		switch {
		case digit:
			next = stFrac
		case s.st == stFrac && (c == 'e' || c == 'E'):
			next = stExp
		case s.st == stFrac:
			s.endNumber(c)
			return
		default:
			s.broken(c)
			return
		}
	case stExp, stExpSign:
		switch {
		case digit:
			next = stExpDigits
		case s.st == stExp && (c == '+' || c == '-'):
			next = stExpSign
		default:
			s.broken(c)
			return
		}
	case stExpDigits:
		if !digit {
			s.endNumber(c)
			return
		}
	}
	s.pend = append(s.pend, c)
	s.st = next
}

// endNumber completes the number being read and hands c to the state after
// it.
func (s *Stream) endNumber(c byte) {
	s.flushMember()
	s.afterValue()
	s.step(c)
}

// afterValue moves past a complete value.
func (s *Stream) afterValue() {
	if len(s.stack) == 0 {
		s.st = stTopEnd
	} else {
		s.st = stAfterValue
	}
}

// closeContainer handles '}' or ']'.
func (s *Stream) closeContainer(c byte) {
	s.out = append(s.out, c)
	s.stack = s.stack[:len(s.stack)-1]
	s.afterValue()
}

// broken switches to text: the held member, c and all that follows are
// redacted as text at Close.
func (s *Stream) broken(c byte) {
	if s.pendOn {
		s.text = append(s.text, s.pend...)
	}
	s.text = append(s.text, c)
	s.pend, s.pendOn = nil, false
	s.st = stText
}

// keyText returns the held key, redacted, with its quotes.
func (s *Stream) keyText() string {
	if s.keyEnd == 0 {
		return ""
	}
	raw := string(s.pend[1 : s.keyEnd-1])
	red := redactString(raw, false, s.m)
	s.redacted = s.redacted || red != raw
	return `"` + red + `"`
}

// flushMember emits the held member or element, complete, redacted: its
// key, what separates it from its value, and the value.
func (s *Stream) flushMember() {
	s.out = append(s.out, s.keyText()...)
	if s.keyEnd > 0 {
		s.out = append(s.out, s.pend[s.keyEnd:s.valAt]...)
	}
	v := string(s.pend[s.valAt:])
	switch {
	case v[0] == '"':
		body := v[1 : len(v)-1]
		red := redactString(body, s.valSecret, s.m)
		s.m.add(2 * len(body)) // isSecretFlag, isSecretKey below
		s.redacted = s.redacted || red != body
		if n := len(s.stack); n > 0 {
			top := &s.stack[n-1]
			switch {
			case !top.obj:
				top.flagNext = isSecretFlag(body)
			case strings.EqualFold(s.keyName, "name") || strings.EqualFold(s.keyName, "key"):
				top.nameSecret = isSecretKey(decode(body).text)
			}
		}
		s.out = append(s.out, '"')
		s.out = append(s.out, red...)
		s.out = append(s.out, '"')
	case s.valSecret && v[0] != 't' && v[0] != 'f' && v[0] != 'n' && valueOK(v):
		// A secret number: replaced by a string, the JSON stays valid.
		s.out = append(s.out, `"`+Marker+`"`...)
		s.redacted = true
	default:
		s.out = append(s.out, v...)
	}
	s.pend, s.pendOn, s.keyEnd = s.pend[:0], false, 0
}

// isSecretFlag reports whether a JSON string body is a command-line flag
// naming a secret, such as "--password" or "-token".
func isSecretFlag(body string) bool {
	if len(body) < 2 || body[0] != '-' || len(body) > maxKeyLen {
		return false
	}
	for i := 0; i < len(body); i++ {
		if !isKeyChar(body[i]) {
			return false
		}
	}
	return isSecretKey(body)
}

func isHex(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

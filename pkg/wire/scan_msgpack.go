package wire

import (
	"unicode/utf8"
)

// mpFrame is one open array or map of a msgpack pre-pass.
type mpFrame struct {
	shape  *shape
	isMap  bool
	left   int    // items (map keys and values, array elements) still to read
	n      int    // arrays: index of the current element
	key    []byte // maps: the current member's key
	hasKey bool
	keys   keySet // strict maps: keys seen
}

// mpScanner is the iterative pre-pass over one msgpack document.
type mpScanner struct {
	data   []byte
	pos    int
	lim    ScanLimits
	strict bool
	elems  int
	// pending counts the items still to read in every open container, and
	// pendingValues the values among them (map keys excluded). Every item
	// takes at least one byte, so a valid document never has more items
	// pending than bytes left.
	pending, pendingValues int
	stack                  []mpFrame
}

// scanMsgpack checks that data starts with one msgpack value within lim
// (and holds nothing else, when strict), with no recursion: the open
// containers live on an explicit stack of at most lim.MaxDepth frames.
//
// It rejects headers that claim more elements or bytes than data holds:
// msgpack v5.4.1 allocates a slice of structs at its declared length (its
// allocation limit is never applied there), so ten bytes claiming 2^32
// input messages would exhaust memory.
//
// When strict, it also rejects map keys that are not strings, invalid
// UTF-8 in str values and keys, duplicate keys, keys that name no field of
// a struct shape exactly, an array where a struct is expected (the decoder
// would fill the fields by position), and extensions other than timestamps.
func scanMsgpack(data []byte, root *shape, lim ScanLimits, strict bool) error {
	if len(data) > lim.MaxBytes {
		return tooBig(len(data), lim.MaxBytes)
	}
	s := &mpScanner{data: data, lim: lim, strict: strict}
	return s.run(root)
}

// msgpack item kinds, as far as the pre-pass cares.
const (
	mpScalar = iota
	mpStr
	mpBin
	mpExt
	mpArray
	mpMap
)

func (s *mpScanner) run(root *shape) error {
	for done := false; !done; {
		// Where does the next item go?
		var top *mpFrame
		isKey := false
		sh := root
		if len(s.stack) > 0 {
			top = &s.stack[len(s.stack)-1]
			if top.left == 0 {
				s.stack = s.stack[:len(s.stack)-1]
				done = len(s.stack) == 0
				continue
			}
			if top.isMap {
				isKey = top.left%2 == 0
			} else {
				top.n = top.n + 1
			}
			top.left--
			s.pending--
			if isKey {
				top.hasKey = false
			} else {
				s.pendingValues--
			}
		}
		start := s.pos
		kind, n, body, err := s.header()
		if err != nil {
			return err
		}

		if isKey {
			if kind != mpStr {
				if s.strict {
					return invalid(ReasonMalformed, s.path(), "map key is not a string")
				}
			} else {
				key := s.data[body : body+n]
				top.key, top.hasKey = key, true
				if s.strict {
					if !utf8.Valid(key) {
						top.hasKey = false
						return invalid(ReasonMalformed, s.path(), "map key not valid UTF-8")
					}
					if !top.keys.add(key) {
						return invalid(ReasonMalformed, s.path(), "duplicate key")
					}
					if _, ok := top.shape.member(key); !ok {
						return unknownField(s.path(), top.shape, key)
					}
				}
				s.pos = body + n
				continue
			}
			// A key that is not a string is read as a value (lenient only).
			sh = anyShape
		} else if top != nil {
			if top.isMap {
				sh = anyShape
				if top.hasKey {
					sh, _ = top.shape.member(top.key)
					if sh == nil {
						sh = anyShape
					}
				}
			} else {
				sh = top.shape.element()
			}
		}

		s.elems++
		if s.elems > s.lim.MaxElements {
			return tooMany(s.path(), s.lim.MaxElements)
		}
		switch kind {
		case mpArray, mpMap:
			if len(s.stack) >= s.lim.MaxDepth {
				return tooDeep(s.path(), s.lim.MaxDepth)
			}
			if s.strict && kind == mpArray && sh.kind == shapeStruct {
				return invalid(ReasonMalformed, s.path(), "array where a map is expected")
			}
			items := n
			if kind == mpMap {
				items = 2 * n
			}
			s.pending += items
			s.pendingValues += n
			if s.pending > len(s.data)-s.pos {
				return invalid(ReasonMalformed, s.path(), "malformed msgpack: %d values declared at offset %d, %d bytes left", s.pending, start, len(s.data)-s.pos)
			}
			if s.elems+s.pendingValues > s.lim.MaxElements {
				return tooMany(s.path(), s.lim.MaxElements)
			}
			s.push(sh, kind == mpMap, items)
		case mpStr:
			if s.strict && !utf8.Valid(s.data[body:body+n]) {
				return invalid(ReasonMalformed, s.path(), "not valid UTF-8")
			}
			s.pos = body + n
		case mpExt:
			// body is the type byte, n the data length.
			if s.strict && (int8(s.data[body]) != -1 || (n != 4 && n != 8 && n != 12)) {
				return invalid(ReasonMalformed, s.path(), "unsupported msgpack extension %d of %d bytes", int8(s.data[body]), n)
			}
			s.pos = body + 1 + n
		default:
			s.pos = body + n
		}
		done = len(s.stack) == 0
	}
	if s.strict && s.pos != len(s.data) {
		return invalid(ReasonMalformed, "", "trailing data after the msgpack value at offset %d", s.pos)
	}
	return nil
}

// header reads the item header at s.pos. It returns the item's kind, n (the
// element count of an array or map, the byte length of anything else) and
// the offset of its body (for an extension, of its type byte). For arrays
// and maps s.pos is past the header; for anything else the caller moves
// s.pos past the body, which header has checked is within data.
func (s *mpScanner) header() (kind, n, body int, err error) {
	d := s.data
	if s.pos >= len(d) {
		return 0, 0, 0, invalid(ReasonMalformed, s.path(), "malformed msgpack: truncated")
	}
	c := d[s.pos]
	p := s.pos + 1
	size := 0 // bytes of a length field
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		kind = mpScalar
	case c <= 0x8f:
		kind, n = mpMap, int(c&0x0f)
	case c <= 0x9f:
		kind, n = mpArray, int(c&0x0f)
	case c <= 0xbf:
		kind, n = mpStr, int(c&0x1f)
	case c == 0xc4 || c == 0xc5 || c == 0xc6:
		kind, size = mpBin, 1<<(c-0xc4)
	case c == 0xd9 || c == 0xda || c == 0xdb:
		kind, size = mpStr, 1<<(c-0xd9)
	case c == 0xc7 || c == 0xc8 || c == 0xc9:
		kind, size = mpExt, 1<<(c-0xc7)
	case c == 0xca:
		kind, n = mpScalar, 4
	case c == 0xcb:
		kind, n = mpScalar, 8
	case c >= 0xcc && c <= 0xcf:
		kind, n = mpScalar, 1<<(c-0xcc)
	case c >= 0xd0 && c <= 0xd3:
		kind, n = mpScalar, 1<<(c-0xd0)
	case c >= 0xd4 && c <= 0xd8:
		kind, n = mpExt, 1<<(c-0xd4)
	case c == 0xdc || c == 0xdd:
		kind, size = mpArray, 2<<(c-0xdc)
	case c == 0xde || c == 0xdf:
		kind, size = mpMap, 2<<(c-0xde)
	default: // 0xc1 is never used
		return 0, 0, 0, invalid(ReasonMalformed, s.path(), "malformed msgpack: invalid code 0x%x at offset %d", c, s.pos)
	}
	if size > 0 {
		if size > len(d)-p {
			return 0, 0, 0, s.overrun(s.pos)
		}
		var v uint64
		for _, b := range d[p : p+size] {
			v = v<<8 | uint64(b)
		}
		if v > uint64(len(d)) {
			return 0, 0, 0, s.overrun(s.pos)
		}
		n, p = int(v), p+size
	}
	body = p
	if kind == mpArray || kind == mpMap {
		s.pos = p
		return kind, n, body, nil
	}
	need := n
	if kind == mpExt {
		need++ // the type byte
	}
	if need > len(d)-p {
		return 0, 0, 0, s.overrun(s.pos)
	}
	return kind, n, body, nil
}

func (s *mpScanner) overrun(at int) *ValidationError {
	return invalid(ReasonMalformed, s.path(), "malformed msgpack: length at offset %d exceeds the data", at)
}

func (s *mpScanner) push(sh *shape, isMap bool, items int) {
	f := mpFrame{shape: sh, isMap: isMap, left: items, n: -1}
	if len(s.stack) < cap(s.stack) {
		s.stack = s.stack[:len(s.stack)+1]
		top := &s.stack[len(s.stack)-1]
		f.keys = top.keys
		f.keys.reset()
		*top = f
		return
	}
	s.stack = append(s.stack, f)
}

// path names the item being scanned.
func (s *mpScanner) path() string {
	var p pathBuilder
	for i := range s.stack {
		f := &s.stack[i]
		switch {
		case !f.isMap:
			if f.n >= 0 {
				p.index(f.n)
			}
		case f.hasKey:
			p.key(f.key)
		}
	}
	return p.String()
}

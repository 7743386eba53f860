package wire

import (
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// ScanLimits bound a JSON or msgpack document, or a Go value about to be
// encoded, before anything recursive touches it. The zero value of a field
// means the DefaultLimits value.
type ScanLimits struct {
	// MaxBytes caps the encoded size. Default DefaultLimits.MaxRequestBytes (1 MiB).
	MaxBytes int
	// MaxDepth caps the nesting of arrays and objects (maps): a scalar has
	// depth 0, {} and [] depth 1. Default DefaultLimits.MaxDepth (64).
	MaxDepth int
	// MaxElements caps the number of values, containers and scalars alike,
	// object keys not counted. Default DefaultLimits.MaxElements (100,000).
	MaxElements int
}

func (l ScanLimits) withDefaults() ScanLimits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultLimits.MaxRequestBytes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultLimits.MaxDepth
	}
	if l.MaxElements <= 0 {
		l.MaxElements = DefaultLimits.MaxElements
	}
	return l
}

// readerLimits bound the lenient decoders (Unmarshal, Decode): depth and
// element count as for requests; the size is the stream's business (its
// maximum message size), so records of any size the stream holds decode.
var readerLimits = ScanLimits{
	MaxBytes:    math.MaxInt,
	MaxDepth:    DefaultLimits.MaxDepth,
	MaxElements: DefaultLimits.MaxElements,
}

// CheckJSON reports whether data is one JSON value within lim, read as
// strictly as UnmarshalStrict reads a request: valid JSON with nothing but
// white space around it, valid UTF-8 in every string and key (and no
// unpaired surrogate escape), no duplicate key in any object, at most
// lim.MaxBytes bytes, lim.MaxDepth levels of nesting and lim.MaxElements
// values. It scans iteratively, in time linear in len(data) and memory
// bounded by lim.MaxDepth, so a hostile document cannot exhaust the stack;
// once it returns nil, decoding data and walking the result recursively is
// bounded by lim too.
//
// Use it on JSON text that comes from elsewhere (tool-call arguments from a
// provider, tool results) before decoding it. A violation is a
// *ValidationError whose Field is the path of the offending value inside
// data ("a.b[3]", "" for the document itself) and whose Reason is
// ReasonTooLarge for a limit, ReasonMalformed otherwise.
func CheckJSON(data []byte, lim ScanLimits) error {
	return scanJSON(data, anyShape, lim.withDefaults(), true)
}

// CheckValue reports whether v, a Go value about to be encoded or walked
// recursively (a tool's Parameters, an event Payload, a decoded argument
// object), nests at most lim.MaxDepth containers (maps, slices, arrays and
// structs; pointers and interfaces are transparent) and holds at most
// lim.MaxElements values. lim.MaxBytes is not used. The walk is iterative,
// so it is safe on any value, even a cyclic one (a cycle nests without end,
// so it fails the depth limit). A violation is a *ValidationError with
// ReasonTooLarge and the path of the offending value inside v as Field.
func CheckValue(v any, lim ScanLimits) error {
	return checkValue("", v, lim.withDefaults())
}

// shapeKind says what a pre-pass expects at one place of a document.
type shapeKind uint8

const (
	// shapeAny is free-form: any value; objects take any keys. Scalars
	// are shapeAny too: the decoder reports a type mismatch.
	shapeAny shapeKind = iota
	// shapeStruct is an object whose keys must name a field exactly.
	shapeStruct
	// shapeSlice is an array of elem.
	shapeSlice
	// shapeMap is an object of any keys with values of elem.
	shapeMap
)

// shape is the part of a Go type a pre-pass needs: which keys an object may
// have and what each member or element is.
type shape struct {
	kind   shapeKind
	fields map[string]*shape // shapeStruct: by exact JSON name
	elem   *shape            // shapeSlice, shapeMap
}

var anyShape = &shape{kind: shapeAny}

// member returns the shape of the member key of an object of s, and false
// when s is a struct without that field.
func (s *shape) member(key []byte) (*shape, bool) {
	switch s.kind {
	case shapeStruct:
		f, ok := s.fields[string(key)]
		return f, ok
	case shapeMap:
		return s.elem, true
	}
	return anyShape, true
}

// element returns the shape of an element of an array of s.
func (s *shape) element() *shape {
	if s.kind == shapeSlice {
		return s.elem
	}
	return anyShape
}

// foldedField returns the field of a struct shape that key names only
// case-insensitively (encoding/json would accept it), or "".
func (s *shape) foldedField(key []byte) string {
	for name := range s.fields {
		if strings.EqualFold(name, string(key)) {
			return name
		}
	}
	return ""
}

// shapeOverrides maps types that decode through a custom method to the type
// whose shape they read.
var shapeOverrides = map[reflect.Type]reflect.Type{
	reflect.TypeFor[Chunk](): reflect.TypeFor[chunkFields](),
}

var (
	shapeCache sync.Map // reflect.Type -> *shape
	shapeMu    sync.Mutex

	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	mpCustom        = reflect.TypeFor[msgpack.CustomDecoder]()
	mpUnmarshaler   = reflect.TypeFor[msgpack.Unmarshaler]()
)

// shapeOf returns the shape of what v (a decode target, usually a pointer)
// decodes from.
func shapeOf(v any) *shape {
	t := reflect.TypeOf(v)
	if t == nil {
		return anyShape
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s, ok := shapeCache.Load(t); ok {
		return s.(*shape)
	}
	shapeMu.Lock()
	defer shapeMu.Unlock()
	s := buildShape(t, map[reflect.Type]*shape{})
	shapeCache.Store(t, s)
	return s
}

// buildShape builds the shape of t. It recurses over the Go type, which the
// program defines, never over input; seen ends the recursion of
// self-referencing types.
func buildShape(t reflect.Type, seen map[reflect.Type]*shape) *shape {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if o, ok := shapeOverrides[t]; ok {
		t = o
	} else if customDecoder(t) {
		return anyShape
	}
	if s, ok := seen[t]; ok {
		return s
	}
	switch t.Kind() {
	case reflect.Struct:
		s := &shape{kind: shapeStruct, fields: map[string]*shape{}}
		seen[t] = s
		addFields(s, t, seen)
		return s
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return anyShape // base64 in JSON, bin in msgpack
		}
		s := &shape{kind: shapeSlice}
		seen[t] = s
		s.elem = buildShape(t.Elem(), seen)
		return s
	case reflect.Map:
		s := &shape{kind: shapeMap}
		seen[t] = s
		s.elem = buildShape(t.Elem(), seen)
		return s
	}
	return anyShape
}

// addFields adds the JSON fields of struct t to s the way encoding/json
// names them: the json tag's name, else the Go name; "-" skipped;
// untagged embedded structs flattened.
func addFields(s *shape, t reflect.Type, seen map[reflect.Type]*shape) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct && !customDecoder(ft) {
			addFields(s, ft, seen)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		s.fields[name] = buildShape(f.Type, seen)
	}
}

func customDecoder(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	for _, i := range []reflect.Type{jsonUnmarshaler, textUnmarshaler, mpCustom, mpUnmarshaler} {
		if t.Implements(i) || p.Implements(i) {
			return true
		}
	}
	return false
}

// keySet detects duplicate keys in one object: a short list, a map past
// 16 keys. Keys may alias the input.
type keySet struct {
	small [][]byte
	big   map[string]struct{}
}

func (k *keySet) reset() {
	k.small = k.small[:0]
	k.big = nil
}

// add records key and reports whether it was new.
func (k *keySet) add(key []byte) bool {
	if k.big != nil {
		if _, dup := k.big[string(key)]; dup {
			return false
		}
		k.big[string(key)] = struct{}{}
		return true
	}
	for _, s := range k.small {
		if string(s) == string(key) {
			return false
		}
	}
	if len(k.small) < 16 {
		k.small = append(k.small, key)
		return true
	}
	k.big = make(map[string]struct{}, 32)
	for _, s := range k.small {
		k.big[string(s)] = struct{}{}
	}
	k.big[string(key)] = struct{}{}
	return true
}

// Paths in ValidationError.Field: members as ".key" (or `["key"]` when the
// key is not made of [A-Za-z0-9_$-]), elements as "[i]". Keys are cut at
// maxPathKey bytes and the path at maxPathLen, so a Field fits an event
// payload string; the path is ASCII whatever the keys hold.
const (
	maxPathKey = 32
	maxPathLen = 128
)

// pathBuilder accumulates a path.
type pathBuilder struct{ b []byte }

func (p *pathBuilder) key(k []byte) {
	cut := len(k) > maxPathKey
	if cut {
		k = k[:maxPathKey]
	}
	if plainKey(k) && !cut {
		if len(p.b) > 0 {
			p.b = append(p.b, '.')
		}
		p.b = append(p.b, k...)
		return
	}
	p.b = append(p.b, '[')
	q := strconv.QuoteToASCII(string(k))
	if cut {
		q = q[:len(q)-1] + `..."`
	}
	p.b = append(p.b, q...)
	p.b = append(p.b, ']')
}

func (p *pathBuilder) index(i int) {
	p.b = append(p.b, '[')
	p.b = strconv.AppendInt(p.b, int64(i), 10)
	p.b = append(p.b, ']')
}

func (p *pathBuilder) String() string { return shortPath(string(p.b)) }

// join appends a sub-path (as built by pathBuilder) to a prefix.
func joinPath(prefix, sub string) string {
	switch {
	case prefix == "":
		return shortPath(sub)
	case sub == "" || sub[0] == '[':
		return shortPath(prefix + sub)
	}
	return shortPath(prefix + "." + sub)
}

func shortPath(s string) string {
	if len(s) <= maxPathLen {
		return s
	}
	const head = 40
	return s[:head] + "..." + s[len(s)-(maxPathLen-head-3):]
}

func plainKey(k []byte) bool {
	if len(k) == 0 {
		return false
	}
	for _, c := range k {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '$') {
			return false
		}
	}
	return true
}

func tooDeep(field string, max int) *ValidationError {
	return invalid(ReasonTooLarge, field, "nested deeper than %d levels", max)
}

func tooMany(field string, max int) *ValidationError {
	return invalid(ReasonTooLarge, field, "more than %d values", max)
}

func tooBig(size, max int) *ValidationError {
	return invalid(ReasonTooLarge, "", "%d bytes, at most %d allowed", size, max)
}

// unknownField reports a key that names no field of a struct shape.
func unknownField(field string, s *shape, key []byte) *ValidationError {
	if name := s.foldedField(key); name != "" {
		return invalid(ReasonUnknownField, field, "unknown field; field names are case-sensitive (did you mean %q?)", name)
	}
	return invalid(ReasonUnknownField, field, "unknown field")
}

// strictError makes a decoder's error a *ValidationError with
// ReasonMalformed, naming the field when the decoder did.
func strictError(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(*ValidationError); ok {
		return err
	}
	field := ""
	if te, ok := err.(*json.UnmarshalTypeError); ok {
		field = shortPath(te.Field)
	}
	return &ValidationError{Reason: ReasonMalformed, Field: field, Detail: fmt.Sprintf("does not decode: %v", err)}
}

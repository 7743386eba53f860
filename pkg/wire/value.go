package wire

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"unicode/utf8"
)

// valueFrame is one open container of a checkValue walk.
type valueFrame struct {
	v    reflect.Value
	iter *reflect.MapIter // maps
	i, n int              // slices, arrays, structs: next index, length
	cur  string           // path step of the child being walked
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// checkValue walks v iteratively (an explicit stack of at most lim.MaxDepth
// frames) and fails when it nests deeper than lim.MaxDepth containers or
// holds more than lim.MaxElements values. prefix is the path of v in its
// record, for the error's Field.
func checkValue(prefix string, v any, lim ScanLimits) error {
	return walkValue(prefix, v, lim, false)
}

// walkValue is checkValue; with texts, it also fails (ReasonMalformed) on a
// string or string map key that is not valid UTF-8, which JSON would
// replace and msgpack carry as it is.
func walkValue(prefix string, v any, lim ScanLimits, texts bool) error {
	var stack []valueFrame
	elems := 0
	path := func() string {
		var sub []byte
		for _, f := range stack {
			sub = append(sub, f.cur...)
		}
		if len(sub) > 0 && sub[0] == '.' {
			sub = sub[1:]
		}
		return joinPath(prefix, string(sub))
	}
	next := reflect.ValueOf(v)
	for {
		if next.IsValid() {
			// Pointers and interfaces are transparent, but a chain of
			// pointers can be a cycle: it may be MaxDepth long at most.
			for ptrs := 0; next.Kind() == reflect.Pointer || next.Kind() == reflect.Interface; {
				if next.IsNil() {
					break
				}
				if next.Kind() == reflect.Pointer {
					if ptrs++; ptrs > lim.MaxDepth {
						return tooDeep(path(), lim.MaxDepth)
					}
				}
				next = next.Elem()
			}
			if texts && next.Kind() == reflect.String && !utf8.ValidString(next.String()) {
				return invalid(ReasonMalformed, path(), "not valid UTF-8")
			}
			elems++
			if elems > lim.MaxElements {
				return tooMany(path(), lim.MaxElements)
			}
			if f, ok := containerFrame(next); ok {
				if len(stack) >= lim.MaxDepth {
					return tooDeep(path(), lim.MaxDepth)
				}
				if elems+f.n > lim.MaxElements {
					return tooMany(path(), lim.MaxElements)
				}
				stack = append(stack, f)
			}
		}
		// The next child of the innermost open container.
		next = reflect.Value{}
		for len(stack) > 0 && !next.IsValid() {
			f := &stack[len(stack)-1]
			switch {
			case f.iter != nil:
				if f.iter.Next() {
					k := f.iter.Key()
					next, f.cur = f.iter.Value(), keyStep(k)
					if texts && k.Kind() == reflect.String && !utf8.ValidString(k.String()) {
						f.cur = ""
						return invalid(ReasonMalformed, path(), "map key not valid UTF-8")
					}
				}
			case f.v.Kind() == reflect.Struct:
				for ; f.i < f.n && !next.IsValid(); f.i++ {
					if sf := f.v.Type().Field(f.i); sf.IsExported() {
						next, f.cur = f.v.Field(f.i), keyStep(reflect.ValueOf(sf.Name))
					}
				}
			case f.i < f.n:
				next, f.cur = f.v.Index(f.i), fmt.Sprintf("[%d]", f.i)
				f.i++
			}
			if !next.IsValid() {
				stack = stack[:len(stack)-1]
			}
		}
		if len(stack) == 0 && !next.IsValid() {
			return nil
		}
	}
}

// containerFrame returns the frame of v when v is a container the JSON and
// msgpack encoders would walk into.
func containerFrame(v reflect.Value) (valueFrame, bool) {
	t := v.Type()
	if t.Implements(jsonMarshaler) || t.Implements(textMarshaler) {
		return valueFrame{}, false // encoded by its own method
	}
	switch v.Kind() {
	case reflect.Map:
		return valueFrame{v: v, iter: v.MapRange(), n: v.Len()}, true
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return valueFrame{}, false // base64 or bin
		}
		return valueFrame{v: v, n: v.Len()}, true
	case reflect.Array:
		return valueFrame{v: v, n: v.Len()}, true
	case reflect.Struct:
		return valueFrame{v: v, n: v.NumField()}, true
	}
	return valueFrame{}, false
}

// keyStep is the path step of a map key or struct field: ".key" or
// `["key"]`.
func keyStep(k reflect.Value) string {
	var p pathBuilder
	if k.Kind() == reflect.String {
		p.key([]byte(k.String()))
	} else {
		p.key([]byte(fmt.Sprint(k)))
	}
	if p.b[0] == '[' {
		return string(p.b)
	}
	return "." + string(p.b)
}

package wire

import (
	"fmt"
	"math"
	"reflect"
	"strings"
)

// payloadTypes maps each event type to its payload type.
var payloadTypes = func() map[string]reflect.Type {
	m := make(map[string]reflect.Type, len(payloads))
	for _, p := range payloads {
		if _, dup := m[p.EventType()]; dup {
			panic("wire: two payload types for " + p.EventType())
		}
		m[p.EventType()] = reflect.TypeOf(p)
	}
	return m
}()

// payloadField is one field of a payload type: its JSON name, whether it
// is left out when zero, and its index path (through embedded structs).
type payloadField struct {
	name      string
	omitEmpty bool
	index     []int
}

// fieldsOf lists the JSON fields of a payload struct type, those of
// embedded structs in place, as encoding/json does.
func fieldsOf(t reflect.Type) []payloadField {
	var out []payloadField
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			for _, sub := range fieldsOf(f.Type) {
				sub.index = append([]int{i}, sub.index...)
				out = append(out, sub)
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, payloadField{name: name, omitEmpty: strings.Contains(","+opts+",", ",omitempty,"), index: []int{i}})
	}
	return out
}

// encodePayload renders p as the flat object SessionEvent.Payload holds:
// its JSON field names, enum values as plain strings, numbers and booleans
// as they are, zero omitempty fields left out.
func encodePayload(p EventPayload) map[string]any {
	v := reflect.ValueOf(p)
	fields := fieldsOf(v.Type())
	m := make(map[string]any, len(fields))
	for _, f := range fields {
		fv := v.FieldByIndex(f.index)
		if f.omitEmpty && fv.IsZero() {
			continue
		}
		m[f.name] = plainValue(fv)
	}
	return m
}

// plainValue is v without its named type: an enum is its string, a
// number keeps its basic type (int, int64), a slice becomes []any.
func plainValue(v reflect.Value) any {
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.Type().PkgPath() == "" {
			return v.Interface()
		}
		return v.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if v.Type().PkgPath() == "" {
			return v.Interface()
		}
		return v.Uint()
	case reflect.Slice:
		out := make([]any, v.Len())
		for i := range out {
			out[i] = plainValue(v.Index(i))
		}
		return out
	}
	panic(fmt.Sprintf("wire: payload field of kind %s", v.Kind())) // the audit test allows no other
}

// decodePayload fills a new value of payload type t from m, which holds
// what either codec decodes a payload to (float64 numbers from JSON,
// sized integers from msgpack) or what encodePayload built.
func decodePayload(t reflect.Type, m map[string]any) (EventPayload, error) {
	v := reflect.New(t).Elem()
	for _, f := range fieldsOf(t) {
		x, ok := m[f.name]
		if !ok || x == nil {
			continue
		}
		if err := setValue(v.FieldByIndex(f.index), x); err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
	}
	return v.Interface().(EventPayload), nil
}

func setValue(dst reflect.Value, x any) error {
	switch dst.Kind() {
	case reflect.String:
		s, ok := x.(string)
		if !ok {
			return fmt.Errorf("%T is not a string", x)
		}
		dst.SetString(s)
	case reflect.Bool:
		b, ok := x.(bool)
		if !ok {
			return fmt.Errorf("%T is not a boolean", x)
		}
		dst.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := integer(x)
		if err != nil {
			return err
		}
		if dst.OverflowInt(n) {
			return fmt.Errorf("%d overflows %s", n, dst.Type())
		}
		dst.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := integer(x)
		if err != nil {
			return err
		}
		if n < 0 || dst.OverflowUint(uint64(n)) {
			return fmt.Errorf("%d overflows %s", n, dst.Type())
		}
		dst.SetUint(uint64(n))
	case reflect.Slice:
		src := reflect.ValueOf(x)
		if src.Kind() != reflect.Slice {
			return fmt.Errorf("%T is not an array", x)
		}
		out := reflect.MakeSlice(dst.Type(), src.Len(), src.Len())
		for i := range src.Len() {
			if err := setValue(out.Index(i), src.Index(i).Interface()); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
		dst.Set(out)
	default:
		return fmt.Errorf("unsupported field kind %s", dst.Kind())
	}
	return nil
}

// integer reads a whole number of any numeric type; a float must be
// integral (JSON numbers decode as float64).
func integer(x any) (int64, error) {
	v := reflect.ValueOf(x)
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int(), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if v.Uint() > math.MaxInt64 {
			return 0, fmt.Errorf("%d overflows int64", v.Uint())
		}
		return int64(v.Uint()), nil
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
			return 0, fmt.Errorf("%v is not an integer", f)
		}
		return int64(f), nil
	}
	return 0, fmt.Errorf("%T is not a number", x)
}

package schemagen

import (
	"reflect"

	"github.com/invopop/jsonschema"

	"github.com/turnstream/turnstream/pkg/wire"
)

var enumType = reflect.TypeFor[wire.Enum]()

// enum maps the wire.Enum types to a string enum of their values.
func enum(t reflect.Type) *jsonschema.Schema {
	if t.Kind() != reflect.String || !t.Implements(enumType) {
		return nil
	}
	values := reflect.Zero(t).Interface().(wire.Enum).Values()
	s := &jsonschema.Schema{Type: "string"}
	for _, v := range values {
		s.Enum = append(s.Enum, v)
	}
	return s
}

// sessionEventSchema is the SessionEvent schema: the envelope from
// wire.SessionEvent; its payload the generic rule every payload follows
// (flat, scalar, bounded), and for each known type, by an if/then on the
// type, the closed schema of its payload type.
func sessionEventSchema(root string) (*jsonschema.Schema, error) {
	r, err := reflector(root, enum, "pkg/wire")
	if err != nil {
		return nil, err
	}
	s, _ := definition(r, reflect.TypeFor[wire.SessionEvent]())
	s.Title = "SessionEvent"
	s.Definitions = jsonschema.Definitions{
		"scalar": {
			Title:       "Scalar",
			Description: "A count, duration, enum value or coarse reason: a number, a boolean or a string of at most 128 characters.",
			MaxLength:   uint64p(128),
			Extras:      map[string]any{"type": []string{"string", "number", "integer", "boolean"}},
		},
	}

	typ, _ := s.Properties.Get("type")
	payload, _ := s.Properties.Get("payload")
	*payload = jsonschema.Schema{
		Title:         payload.Title,
		Description:   payload.Description,
		Type:          "object",
		MaxProperties: uint64p(64),
		PropertyNames: &jsonschema.Schema{Pattern: "^[a-z][a-z0-9_]{0,63}$"},
		AdditionalProperties: &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
			{Ref: "#/$defs/scalar"},
			{Type: "array", MaxItems: uint64p(128), Items: &jsonschema.Schema{Ref: "#/$defs/scalar"}},
		}},
	}
	for _, p := range wire.EventPayloads() {
		t := reflect.TypeOf(p)
		def, _ := definition(r, t)
		def.Title = "Payload of " + p.EventType()
		name := defName(t.Name())
		s.Definitions[name] = def
		typ.Examples = append(typ.Examples, p.EventType())
		s.AllOf = append(s.AllOf, &jsonschema.Schema{
			If:   withProperty(&jsonschema.Schema{Required: []string{"type"}}, "type", &jsonschema.Schema{Const: p.EventType()}),
			Then: withProperty(&jsonschema.Schema{}, "payload", &jsonschema.Schema{Ref: "#/$defs/" + name}),
		})
	}
	return s, nil
}

func uint64p(n uint64) *uint64 { return &n }

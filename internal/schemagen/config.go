package schemagen

import (
	"encoding/json"
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/provider/apis"
)

// durationPattern is a Go duration string, or "0".
const durationPattern = `^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|μs|ms|s|m|h))+)$`

// headerName is an HTTP header field name (RFC 9110 token) and
// credentialHeader the names of headers that carry credentials, refused in
// config (keys go in api_key_env or api_key_file).
const (
	headerName       = "^[A-Za-z0-9!#$%&'*+.^_`|~-]+$"
	credentialHeader = "^([Aa][Uu][Tt][Hh][Oo][Rr][Ii][Zz][Aa][Tt][Ii][Oo][Nn]|([Xx]-)?[Aa][Pp][Ii]-[Kk][Ee][Yy])$"
)

// configSchema is the config file's schema, from config.Config: its
// required keys and constraints from the jsonschema tags, durations as
// $defs/duration, and from the API descriptors (apis.All) the api enum,
// its description and each API's fragment.
func configSchema(root string) (*jsonschema.Schema, error) {
	durationType, apiType := reflect.TypeFor[config.Duration](), reflect.TypeFor[config.API]()
	r, err := reflector(root, func(t reflect.Type) *jsonschema.Schema {
		switch t {
		case durationType:
			return &jsonschema.Schema{Ref: "#/$defs/duration"}
		case apiType:
			s := &jsonschema.Schema{Type: "string"}
			for _, name := range apis.Configurable() {
				s.Enum = append(s.Enum, name)
			}
			return s
		}
		return nil
	}, "internal/config")
	if err != nil {
		return nil, err
	}
	r.RequiredFromJSONSchemaTags = true
	s, defs := definition(r, reflect.TypeFor[config.Config]())
	s.Title = "Worker config"
	s.Definitions = defs
	defs["duration"] = &jsonschema.Schema{
		Title:       "Duration",
		Description: `A Go duration string such as "90s", "2m" or "1h30m"; "0" or absent means the default.`,
		Type:        "string",
		Pattern:     durationPattern,
	}

	p := defs["provider"]
	p.Not = &jsonschema.Schema{Required: []string{"api_key_env", "api_key_file"}}
	headers, _ := p.Properties.Get("headers")
	headers.PropertyNames = &jsonschema.Schema{Pattern: headerName, Not: &jsonschema.Schema{Pattern: credentialHeader}}
	api, _ := p.Properties.Get("api")
	var docs []string
	for _, a := range apis.All() {
		if !a.Configurable() {
			continue
		}
		docs = append(docs, a.Name+": "+a.Doc)
		frag := a.SchemaFragment()
		if frag == nil {
			continue
		}
		then, err := fromMap(frag)
		if err != nil {
			return nil, err
		}
		p.AllOf = append(p.AllOf, &jsonschema.Schema{
			If:   withProperty(&jsonschema.Schema{}, "api", &jsonschema.Schema{Const: a.Name}),
			Then: then,
		})
	}
	api.Description = strings.Join(append([]string{api.Description}, docs...), " ")
	return s, nil
}

// fromMap reads a schema fragment given as a JSON value.
func fromMap(m map[string]any) (*jsonschema.Schema, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	s := new(jsonschema.Schema)
	return s, json.Unmarshal(b, s)
}

package schemagen

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/turnstream/turnstream/schemas"
)

// module is the module path; a package's comments are read from its
// directory below the module root.
const module = "github.com/turnstream/turnstream"

// baseID is the $id prefix of every schema.
const baseID = "https://github.com/turnstream/turnstream/schemas/"

// Generate returns the generated schema files, by file name (the schemas
// constants), as they belong in schemas/. root is the module's root
// directory, whose Go sources give the descriptions.
func Generate(root string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for name, build := range map[string]func(root string) (*jsonschema.Schema, error){
		schemas.SessionEvent: sessionEventSchema,
		schemas.Config:       configSchema,
	} {
		s, err := build(root)
		if err != nil {
			return nil, fmt.Errorf("schemagen: %s: %w", name, err)
		}
		s.Version, s.ID = jsonschema.Version, jsonschema.ID(baseID+name)
		if err := checkDocumented("#", s); err != nil {
			return nil, fmt.Errorf("schemagen: %s: %w", name, err)
		}
		b, err := encode(s)
		if err != nil {
			return nil, fmt.Errorf("schemagen: %s: %w", name, err)
		}
		out[name] = b
	}
	return out, nil
}

// Root finds the module root: dir or the closest parent holding go.mod.
func Root(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("schemagen: no go.mod above the working directory")
		}
		dir = parent
	}
}

// reflector is a Reflector for the types of the packages at the given
// directories (relative to root), with their comments, $defs named
// snake_case, and the schemas of mapped types (enums, durations) from
// mapper.
func reflector(root string, mapper func(reflect.Type) *jsonschema.Schema, pkgs ...string) (*jsonschema.Reflector, error) {
	r := &jsonschema.Reflector{
		Anonymous:      true,
		ExpandedStruct: true,
		Namer:          func(t reflect.Type) string { return defName(t.Name()) },
		Mapper:         mapper,
		CommentMap:     map[string]string{},
	}
	for _, p := range pkgs {
		if err := comments(r.CommentMap, filepath.Join(root, filepath.FromSlash(p)), module+"/"+p); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// definition reflects t as a $defs entry: the reflection's root, without
// the root-only keywords, and its own $defs returned apart.
func definition(r *jsonschema.Reflector, t reflect.Type) (*jsonschema.Schema, jsonschema.Definitions) {
	s := r.ReflectFromType(t)
	defs := s.Definitions
	s.Version, s.ID, s.Definitions = "", "", nil
	return s, defs
}

// withProperty gives s one property, name, of schema p.
func withProperty(s *jsonschema.Schema, name string, p *jsonschema.Schema) *jsonschema.Schema {
	s.Properties = jsonschema.NewProperties()
	s.Properties.Set(name, p)
	return s
}

// checkDocumented titles every property without a title from its name and
// fails for any property without a description: every field of the Go
// types needs a doc comment.
func checkDocumented(ptr string, s *jsonschema.Schema) error {
	if s == nil {
		return nil
	}
	var errs []error
	if s.Properties != nil {
		for pair := s.Properties.Oldest(); pair != nil; pair = pair.Next() {
			p := pair.Value
			if p.Title == "" {
				p.Title = title(pair.Key)
			}
			if p.Description == "" {
				errs = append(errs, fmt.Errorf("%s/properties/%s has no description: give its Go field a doc comment", ptr, pair.Key))
			}
			errs = append(errs, checkDocumented(ptr+"/properties/"+pair.Key, p))
		}
	}
	names := make([]string, 0, len(s.Definitions))
	for n := range s.Definitions {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		d := s.Definitions[n]
		if d.Title == "" {
			d.Title = title(n)
		}
		errs = append(errs, checkDocumented(ptr+"/$defs/"+n, d))
	}
	for _, sub := range []*jsonschema.Schema{s.Items, s.AdditionalProperties} {
		errs = append(errs, checkDocumented(ptr, sub))
	}
	return errors.Join(errs...)
}

// encode writes s as the files are kept: indented by two spaces, a final
// newline, and "<", ">" and "&" as themselves (the library's encoder
// escapes them for HTML).
func encode(s *jsonschema.Schema) ([]byte, error) {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	r := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&")
	return append([]byte(r.Replace(string(b))), '\n'), nil
}

package config

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"go.yaml.in/yaml/v3"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Problem is one rule a config file breaks.
type Problem struct {
	// Key is the offending key as a path from the top of the file, such
	// as "providers[0].api" ("" for the file as a whole).
	Key string
	// Line is the key's line in the file, 0 if unknown.
	Line int
	// Rule is the config schema's keyword that failed ("enum", "type",
	// "required", "additionalProperties", "pattern", ...).
	Rule string
	// Message says what is wrong.
	Message string
}

// String renders p as "line: key: message (schema rule: rule)".
func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "%d: ", p.Line)
	}
	if p.Key != "" {
		b.WriteString(p.Key + ": ")
	}
	b.WriteString(p.Message)
	if p.Rule != "" {
		fmt.Fprintf(&b, " (schema rule: %s)", p.Rule)
	}
	return b.String()
}

// SchemaError reports every place where a config file breaks the config
// schema (schemas/config.schema.json). Load returns it with File set.
type SchemaError struct {
	// File is the config file's path as the user gave it; "" for Parse.
	File     string
	Problems []Problem
}

// Error renders one problem a line, as "FILE:LINE: key: message (schema
// rule: rule)", so editors can jump to each.
func (e *SchemaError) Error() string {
	file, head := e.File, "config "+e.File
	if file == "" {
		file, head = "config", "config"
	}
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		if p.Line > 0 {
			lines[i] = file + ":" + p.String()
		} else {
			lines[i] = file + ": " + p.String()
		}
	}
	if len(lines) == 1 && e.File != "" {
		return "config " + lines[0]
	}
	if len(lines) == 1 {
		return lines[0]
	}
	return fmt.Sprintf("%s: %d problems:\n  %s", head, len(lines), strings.Join(lines, "\n  "))
}

// inFile names the config file in err; each of the problems err joins
// (Config.Validate reports them all) gets a line of its own.
func inFile(path string, err error) error {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	if len(errs) <= 1 {
		return fmt.Errorf("config %s: %w", path, err)
	}
	lines := make([]string, len(errs))
	for i, e := range errs {
		lines[i] = path + ": " + e.Error()
	}
	return &fileError{msg: fmt.Sprintf("config %s: %d problems:\n  %s", path, len(errs), strings.Join(lines, "\n  ")), errs: errs}
}

// fileError is the problems of a config file, one a line.
type fileError struct {
	msg  string
	errs []error
}

func (e *fileError) Error() string   { return e.msg }
func (e *fileError) Unwrap() []error { return e.errs }

var printer = message.NewPrinter(language.English)

// schemaProblems turns a schema validation error of the document data
// into Problems, located in the YAML text.
func schemaProblems(data []byte, schemaDoc any, err error) error {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("config schema: %w", err)
	}
	var root yaml.Node
	_ = yaml.Unmarshal(data, &root) // it decoded once already
	var out []Problem
	// at, when set, is where the leaves under a propertyNames failure are:
	// jsonschema v6.0.3 reports them at a wrong location.
	var walk func(e *jsonschema.ValidationError, parent, at []string, context string)
	walk = func(e *jsonschema.ValidationError, parent, at []string, context string) {
		if len(e.Causes) == 0 {
			if at != nil {
				e.InstanceLocation = at
			}
			for _, p := range leafProblems(&root, schemaDoc, e) {
				if context != "" {
					p.Message = context + ": " + p.Message
				}
				out = append(out, p)
			}
			return
		}
		if k, ok := e.ErrorKind.(*kind.PropertyNames); ok {
			// The causes are about a key, not a value: say which, and
			// where (the object the schema location names, in parent).
			context = fmt.Sprintf("key %q", k.Property)
			at = slices.Clip(parent)
			if obj := strings.TrimSuffix(e.SchemaURL, "/propertyNames"); strings.Contains(obj, "/properties/") {
				at = append(at, obj[strings.LastIndex(obj, "/")+1:])
			}
			at = append(at, k.Property)
		} else {
			parent = e.InstanceLocation
		}
		for _, c := range e.Causes {
			walk(c, parent, at, context)
		}
	}
	walk(ve, nil, nil, "")
	slices.SortStableFunc(out, func(a, b Problem) int { return a.Line - b.Line })
	return &SchemaError{Problems: out}
}

// leafProblems are the problems of one failed keyword.
func leafProblems(root *yaml.Node, schemaDoc any, e *jsonschema.ValidationError) []Problem {
	rule := strings.Join(e.ErrorKind.KeywordPath(), "/")
	if rule == "" {
		// A false schema: the keyword is the last token of its location.
		rule = e.SchemaURL[strings.LastIndex(e.SchemaURL, "/")+1:]
	}
	key, line := locate(root, e.InstanceLocation)
	switch k := e.ErrorKind.(type) {
	case *kind.FalseSchema:
		// A key no property allows: the schema at the parent lists the
		// known ones.
		msg := "not allowed here"
		if n := len(e.InstanceLocation); n > 0 {
			msg = unknownKey(e.InstanceLocation[n-1], schemaKeys(schemaDoc, parentURL(e.SchemaURL)))
		}
		return []Problem{{Key: key, Line: line, Rule: rule, Message: msg}}
	case *kind.Not:
		msg := "is not allowed"
		if d := schemaDescription(schemaDoc, e.SchemaURL); d != "" {
			msg += ": " + d
		} else if d := schemaDescription(schemaDoc, parentURL(e.SchemaURL)); d != "" && strings.HasSuffix(e.SchemaURL, "/propertyNames") {
			msg += ": " + d
		}
		return []Problem{{Key: key, Line: line, Rule: rule, Message: msg}}
	case *kind.AdditionalProperties:
		known := schemaKeys(schemaDoc, e.SchemaURL)
		var ps []Problem
		for _, name := range k.Properties {
			pk, pl := locate(root, append(slices.Clip(e.InstanceLocation), name))
			ps = append(ps, Problem{Key: pk, Line: pl, Rule: rule, Message: unknownKey(name, known)})
		}
		return ps
	case *kind.Required:
		var ps []Problem
		for _, name := range k.Missing {
			ps = append(ps, Problem{Key: joinKey(key, name), Line: line, Rule: rule, Message: "required key is missing"})
		}
		return ps
	case *kind.Enum:
		return []Problem{{Key: key, Line: line, Rule: rule, Message: fmt.Sprintf("%v: %s", display(k.Got), k.LocalizedString(printer))}}
	case *kind.Pattern:
		msg := fmt.Sprintf("%q does not match the pattern %s", k.Got, k.Want)
		if d := schemaDescription(schemaDoc, e.SchemaURL); d != "" {
			msg = fmt.Sprintf("%q is not valid: %s", k.Got, d)
		}
		return []Problem{{Key: key, Line: line, Rule: rule, Message: msg}}
	}
	return []Problem{{Key: key, Line: line, Rule: rule, Message: e.ErrorKind.LocalizedString(printer)}}
}

// unknownKey says that name is no key of an object whose keys are known.
func unknownKey(name string, known []string) string {
	switch near := nearest(name, known); {
	case near != "":
		return fmt.Sprintf("unknown key; did you mean %q?", near)
	case len(known) > 0:
		return "unknown key (known: " + strings.Join(known, ", ") + ")"
	}
	return "unknown key"
}

// display quotes a string value, and prints any other as it is.
func display(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

// locate renders an instance location as a key path ("models[0].name")
// and finds the line of its key (of its element, in a list) in the YAML
// document; line is 0 where the path leaves the document.
func locate(root *yaml.Node, path []string) (key string, line int) {
	n := root
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	if n != nil {
		line = n.Line
	}
	for _, seg := range path {
		var next *yaml.Node
		switch {
		case n != nil && n.Kind == yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == seg {
					line, next = n.Content[i].Line, n.Content[i+1]
					break
				}
			}
			key = joinKey(key, seg)
		case n != nil && n.Kind == yaml.SequenceNode:
			if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(n.Content) {
				next = n.Content[i]
				line = next.Line
			}
			key += "[" + seg + "]"
		default:
			if _, err := strconv.Atoi(seg); err == nil {
				key += "[" + seg + "]"
			} else {
				key = joinKey(key, seg)
			}
		}
		if next == nil {
			line = 0
		}
		n = next
	}
	return key, line
}

func joinKey(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// parentURL is the location of the schema object holding the keyword or
// property that url ends with ("#/$defs/budgets/additionalProperties" →
// "#/$defs/budgets"; "#/$defs/provider/properties/headers/propertyNames"
// → "#/$defs/provider/properties/headers").
func parentURL(url string) string {
	url = url[:max(strings.LastIndex(url, "/"), 0)]
	if strings.HasSuffix(url, "/properties") {
		url = strings.TrimSuffix(url, "/properties")
	}
	return url
}

// schemaAt is the schema object at the fragment of a schema URL in the
// schema document, nil if there is none.
func schemaAt(doc any, url string) map[string]any {
	_, frag, _ := strings.Cut(url, "#")
	cur := doc
	for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		if tok == "" {
			continue
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[tok]
	}
	m, _ := cur.(map[string]any)
	return m
}

// schemaKeys are the property names of the schema at url, sorted.
func schemaKeys(doc any, url string) []string {
	props, _ := schemaAt(doc, url)["properties"].(map[string]any)
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// schemaDescription is the description of the schema at url.
func schemaDescription(doc any, url string) string {
	d, _ := schemaAt(doc, url)["description"].(string)
	return d
}

// nearest is the known key closest to name: the same but for case, or at
// most two edits away; "" if none is.
func nearest(name string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if strings.EqualFold(k, name) {
			return k
		}
		if d := editDistance(name, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b (config keys: short).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

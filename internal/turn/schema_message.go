package turn

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/turnstream/turnstream/internal/redact"
)

// Bounds of a described validation error: the model needs the first
// problems, not all of them.
const (
	describeProblems = 3
	describeValues   = 10  // enum values listed
	describeValueLen = 48  // bytes of one listed value
	describeMaxLen   = 800 // bytes of the whole text
)

// describe writes a validation error for the model, from its structure:
// for each of the first problems, the place in the arguments (a JSON
// pointer), the rule and where the schema states it. It never quotes a
// value of the arguments (the library's own text does: "'sk-live-…' does
// not match pattern"); it quotes only what the schema says (a pattern, the
// values of an enum, property names it requires) and the names of
// properties the arguments have but may not.
func describe(verr *jsonschema.ValidationError) string {
	type problem struct{ at, rule, schema string }
	var found []problem
	more := 0
	seen := map[string]bool{}
	// Depth first, in the library's order, iteratively.
	stack := []*jsonschema.ValidationError{verr}
	for len(stack) > 0 {
		e := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if len(e.Causes) > 0 {
			for i := len(e.Causes) - 1; i >= 0; i-- {
				stack = append(stack, e.Causes[i])
			}
			continue
		}
		rule, ok := ruleOf(e.ErrorKind)
		if !ok {
			continue
		}
		p := problem{at: instancePointer(e.InstanceLocation), rule: rule, schema: keywordLocation(e)}
		key := p.at + "\x00" + p.rule
		if seen[key] {
			continue
		}
		seen[key] = true
		if len(found) == describeProblems {
			more++
			continue
		}
		found = append(found, p)
	}
	if len(found) == 0 {
		return "they fail the schema"
	}
	var b strings.Builder
	for i, p := range found {
		if i > 0 {
			b.WriteString("; ")
		}
		if p.at == "" {
			b.WriteString("the arguments object ")
		} else {
			b.WriteString("at ")
			b.WriteString(p.at)
			b.WriteString(": the value ")
		}
		b.WriteString(p.rule)
		if p.schema != "" {
			b.WriteString(" (schema ")
			b.WriteString(p.schema)
			b.WriteString(")")
		}
	}
	if more > 0 {
		fmt.Fprintf(&b, "; and %d more problem(s)", more)
	}
	return clip(b.String(), describeMaxLen)
}

// ruleOf states the rule an error kind reports, without the value that
// broke it. Wrappers (groups, references, the schema) have none.
func ruleOf(k jsonschema.ErrorKind) (string, bool) {
	switch k := k.(type) {
	case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf, *kind.AnyOf:
		return "", false
	case *kind.Type:
		return fmt.Sprintf("must be %s (it is %s)", strings.Join(quoteAll(k.Want, false), " or "), article(k.Got)), true
	case *kind.Enum:
		return "must be one of the values the schema lists" + listValues(k.Want), true
	case *kind.Const:
		return "must be the constant the schema sets" + listValues([]any{k.Want}), true
	case *kind.Pattern:
		return "must match the pattern " + strconv.Quote(clip(k.Want, 2*describeValueLen)), true
	case *kind.Format:
		return "must be a valid " + tokenOr(k.Want, "value of its format"), true
	case *kind.MinLength:
		return fmt.Sprintf("must be at least %d characters long (it has %d)", k.Want, k.Got), true
	case *kind.MaxLength:
		return fmt.Sprintf("must be at most %d characters long (it has %d)", k.Want, k.Got), true
	case *kind.Minimum:
		return "must be at least " + rat(k.Want), true
	case *kind.Maximum:
		return "must be at most " + rat(k.Want), true
	case *kind.ExclusiveMinimum:
		return "must be greater than " + rat(k.Want), true
	case *kind.ExclusiveMaximum:
		return "must be less than " + rat(k.Want), true
	case *kind.MultipleOf:
		return "must be a multiple of " + rat(k.Want), true
	case *kind.MinItems:
		return fmt.Sprintf("must have at least %d items (it has %d)", k.Want, k.Got), true
	case *kind.MaxItems:
		return fmt.Sprintf("must have at most %d items (it has %d)", k.Want, k.Got), true
	case *kind.AdditionalItems:
		return fmt.Sprintf("has %d more items than the schema allows", k.Count), true
	case *kind.MinProperties:
		return fmt.Sprintf("must have at least %d properties (it has %d)", k.Want, k.Got), true
	case *kind.MaxProperties:
		return fmt.Sprintf("must have at most %d properties (it has %d)", k.Want, k.Got), true
	case *kind.Required:
		return "is missing the required properties " + strings.Join(quoteAll(k.Missing, true), ", "), true
	case *kind.Dependency:
		return fmt.Sprintf("has %s, which requires the properties %s", strconv.Quote(clip(k.Prop, describeValueLen)), strings.Join(quoteAll(k.Missing, true), ", ")), true
	case *kind.DependentRequired:
		return fmt.Sprintf("has %s, which requires the properties %s", strconv.Quote(clip(k.Prop, describeValueLen)), strings.Join(quoteAll(k.Missing, true), ", ")), true
	case *kind.AdditionalProperties:
		return "has properties the schema does not allow: " + strings.Join(quoteAll(redactAll(k.Properties), true), ", "), true
	case *kind.PropertyNames:
		return "has a property name that the schema's propertyNames does not allow", true
	case *kind.UniqueItems:
		return fmt.Sprintf("must have unique items (items %d and %d are equal)", k.Duplicates[0], k.Duplicates[1]), true
	case *kind.Contains:
		return "must contain an item that matches the schema's contains", true
	case *kind.MinContains:
		return fmt.Sprintf("must contain at least %d items that match the schema's contains (it has %d)", k.Want, len(k.Got)), true
	case *kind.MaxContains:
		return fmt.Sprintf("must contain at most %d items that match the schema's contains (it has %d)", k.Want, len(k.Got)), true
	case *kind.OneOf:
		if len(k.Subschemas) > 1 {
			return fmt.Sprintf("matches more than one alternative of oneOf (alternatives %d and %d)", k.Subschemas[0], k.Subschemas[1]), true
		}
		return "matches none of the alternatives of oneOf", true
	case *kind.Not:
		return "must not match the schema under not", true
	case *kind.FalseSchema:
		return "is not allowed here", true
	case *kind.RefCycle:
		return "cannot be checked: the schema applies itself in place", true
	case *kind.InvalidJsonValue:
		return "is not a JSON value", true
	}
	if kw := k.KeywordPath(); len(kw) > 0 {
		return "fails the schema's " + tokenOr(strings.Join(kw, "/"), "rule"), true
	}
	return "fails the schema", true
}

// redactAll redacts names that come from the arguments (keys a model
// wrote), in case one holds a credential.
func redactAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i], _ = redact.Redact(n)
	}
	return out
}

// instancePointer is the JSON pointer of a place in the arguments.
func instancePointer(loc []string) string {
	var b strings.Builder
	for _, t := range redactAll(loc) {
		b.WriteString("/")
		b.WriteString(pointerToken(clip(t, describeValueLen)))
	}
	return b.String()
}

// keywordLocation is the place in the schema of the keyword that failed:
// the failing schema's pointer and the keyword.
func keywordLocation(e *jsonschema.ValidationError) string {
	loc := ""
	if i := strings.IndexByte(e.SchemaURL, '#'); i >= 0 {
		loc = e.SchemaURL[i+1:]
	}
	kws := e.ErrorKind.KeywordPath()
	if _, ok := e.ErrorKind.(*kind.Not); ok {
		kws = []string{"not"}
	}
	for _, kw := range kws {
		loc += "/" + pointerToken(kw)
	}
	if loc == "" {
		return ""
	}
	return clip(loc, 2*describeValueLen)
}

// listValues lists the scalar values a schema allows, when they are few
// and short.
func listValues(vs []any) string {
	if len(vs) == 0 || len(vs) > describeValues {
		return ""
	}
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		switch v.(type) {
		case map[string]any, []any:
			return ""
		}
		b, err := json.Marshal(v)
		if err != nil || len(b) > describeValueLen {
			return ""
		}
		out = append(out, string(b))
	}
	return ": " + strings.Join(out, ", ")
}

func quoteAll(ss []string, quote bool) []string {
	out := make([]string, 0, min(len(ss), describeValues+1))
	for i, s := range ss {
		if i == describeValues {
			out = append(out, fmt.Sprintf("and %d more", len(ss)-i))
			break
		}
		s = clip(s, describeValueLen)
		if quote {
			s = strconv.Quote(s)
		}
		out = append(out, s)
	}
	return out
}

func article(t string) string {
	switch t {
	case "object", "array", "integer":
		return "an " + t
	case "null":
		return "null"
	}
	return "a " + t
}

func rat(r *big.Rat) string {
	if r == nil {
		return "the schema's bound"
	}
	if r.IsInt() {
		return clip(r.Num().String(), describeValueLen)
	}
	return clip(strings.TrimRight(r.FloatString(12), "0"), describeValueLen)
}

func tokenOr(s, fallback string) string {
	if tokenValue.MatchString(s) {
		return s
	}
	return fallback
}

// clip cuts s to at most n bytes at a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

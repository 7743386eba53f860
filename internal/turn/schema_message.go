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
// problems, not all of them. Describing does bounded work per leaf error
// of the validator, and stops after describeMore further problems or
// describeLeaves leaves: the validator's own work is bounded by the cost
// analysis, the description must not add to it in proportion to the
// arguments' bytes (a path through a long key, for every error below it).
const (
	describeProblems = 3
	describeMore     = 1_000  // further problems counted, past the described ones
	describeLeaves   = 10_000 // leaf errors looked at, at most
	describeValues   = 10     // enum values or property names listed
	describeValueLen = 48     // bytes of one listed value, or one path token
	describeMaxLen   = 800    // bytes of the whole text

	// describeNameWindow is how much of a name from the arguments (a key,
	// a property name) is redacted, before it is clipped to
	// describeValueLen: a long name costs what a short one does, and a
	// credential that starts in the part shown is seen by the redaction
	// for over 200 bytes, whole or far enough for its rule.
	describeNameWindow = 256
	// describePointerLen bounds a described place: tokens past it are
	// left out ("/…").
	describePointerLen = 2 * describeValueLen
)

// describe writes a validation error for the model, from its structure:
// for each of the first problems, the place in the arguments (a JSON
// pointer), the rule and where the schema states it. It never quotes a
// value of the arguments (the library's own text does: "'sk-live-…' does
// not match pattern"); it quotes only what the schema says (a pattern, the
// values of an enum, property names it requires) and the names of
// properties the arguments have but may not, redacted.
//
// Its work is bounded whatever the error: a few hundred bytes of text per
// leaf looked at (a pointer clipped before it is built, a rule whose lists
// are clipped), at most describeLeaves leaves, and redaction only for the
// problems described, of at most describeNameWindow bytes a name.
func describe(verr *jsonschema.ValidationError) string {
	var (
		found  []*jsonschema.ValidationError
		more   int
		leaves int
		cut    bool
		seen   = map[string]bool{}
	)
	// leaf handles one leaf error; false stops the walk.
	leaf := func(e *jsonschema.ValidationError) bool {
		if leaves++; leaves > describeLeaves {
			cut = true
			return false
		}
		// The place and the rule as shown, but not redacted: redaction
		// is for the problems described.
		rule, ok := ruleOf(e.ErrorKind, false)
		if !ok {
			return true
		}
		key := boundedPointer(e.InstanceLocation, false) + "\x00" + rule
		if seen[key] {
			return true
		}
		seen[key] = true
		if len(found) < describeProblems {
			found = append(found, e)
			return true
		}
		if more++; more == describeMore {
			cut = true
			return false
		}
		return true
	}
	// Depth first, in the library's order, iteratively: a frame per open
	// error and the index of its next cause.
	type frame struct {
		e    *jsonschema.ValidationError
		next int
	}
	stack := []frame{{e: verr}}
	if len(verr.Causes) == 0 {
		stack = nil
		leaf(verr)
	}
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		if f.next == len(f.e.Causes) {
			stack = stack[:len(stack)-1]
			continue
		}
		c := f.e.Causes[f.next]
		f.next++
		if len(c.Causes) > 0 {
			stack = append(stack, frame{e: c})
		} else if !leaf(c) {
			break
		}
	}
	if len(found) == 0 {
		return "they fail the schema"
	}
	var b strings.Builder
	for i, e := range found {
		if i > 0 {
			b.WriteString("; ")
		}
		if at := instancePointer(e.InstanceLocation); at == "" {
			b.WriteString("the arguments object ")
		} else {
			b.WriteString("at ")
			b.WriteString(at)
			b.WriteString(": the value ")
		}
		rule, _ := ruleOf(e.ErrorKind, true)
		b.WriteString(rule)
		if schema := keywordLocation(e); schema != "" {
			b.WriteString(" (schema ")
			b.WriteString(schema)
			b.WriteString(")")
		}
	}
	// The count stays when the text is clipped.
	var tail string
	switch {
	case cut && more > 0:
		tail = fmt.Sprintf("; and at least %d more problem(s)", more)
	case cut:
		tail = "; and perhaps more problems"
	case more > 0:
		tail = fmt.Sprintf("; and %d more problem(s)", more)
	}
	return clip(b.String(), describeMaxLen-len(tail)) + tail
}

// ruleOf states the rule an error kind reports, without the value that
// broke it. Wrappers (groups, references, the schema) have none. Its text
// is bounded: lists and values are clipped before they are written. Names
// from the arguments are redacted if redacted (for the text shown), else
// only clipped (to tell problems apart).
func ruleOf(k jsonschema.ErrorKind, redacted bool) (string, bool) {
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
		return "has properties the schema does not allow: " + strings.Join(quoteNames(k.Properties, redacted), ", "), true
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

// redactName redacts a name that comes from the arguments (a key a model
// wrote), in case it holds a credential, and clips it to describeValueLen
// bytes. The redaction sees only its first describeNameWindow bytes.
func redactName(n string) string {
	w, cut := window(n, describeNameWindow)
	r, _ := redact.Redact(w)
	if cut && len(r) <= describeValueLen {
		return r + "…"
	}
	return clip(r, describeValueLen)
}

// quoteNames quotes the first describeValues names from the arguments,
// redacted if redacted (else clipped), and counts the others, which are
// neither shown nor redacted.
func quoteNames(names []string, redacted bool) []string {
	out := make([]string, 0, min(len(names), describeValues+1))
	for i, n := range names {
		if i == describeValues {
			out = append(out, fmt.Sprintf("and %d more", len(names)-i))
			break
		}
		if redacted {
			n = redactName(n)
		} else {
			n = clip(n, describeValueLen)
		}
		out = append(out, strconv.Quote(n))
	}
	return out
}

// instancePointer is the JSON pointer of a place in the arguments, as the
// model is shown it: each token redacted (redactName), about
// describePointerLen bytes at most.
func instancePointer(loc []string) string { return boundedPointer(loc, true) }

// boundedPointer writes a place's tokens, each clipped to
// describeValueLen bytes (redacted first if redacted), and stops past
// describePointerLen bytes: the work is bounded whatever the place's
// depth and keys.
func boundedPointer(loc []string, redacted bool) string {
	var b strings.Builder
	for _, t := range loc {
		if b.Len() >= describePointerLen {
			b.WriteString("/…")
			break
		}
		if redacted {
			t = redactName(t)
		} else {
			t = clip(t, describeValueLen)
		}
		b.WriteString("/")
		b.WriteString(pointerToken(t))
	}
	return b.String()
}

// keywordLocation is the place in the schema of the keyword that failed:
// the failing schema's pointer and the keyword.
func keywordLocation(e *jsonschema.ValidationError) string {
	const limit = 2 * describeValueLen
	loc := ""
	if i := strings.IndexByte(e.SchemaURL, '#'); i >= 0 {
		loc = e.SchemaURL[i+1:]
	}
	if len(loc) > limit {
		// The schema's own keys can be long: clip before adding to it.
		return clip(loc, limit)
	}
	kws := e.ErrorKind.KeywordPath()
	if _, ok := e.ErrorKind.(*kind.Not); ok {
		kws = []string{"not"}
	}
	for _, kw := range kws {
		if len(loc) > limit {
			break
		}
		loc += "/" + pointerToken(clip(kw, limit))
	}
	if loc == "" {
		return ""
	}
	return clip(loc, limit)
}

// listValues lists the scalar values a schema allows, when they are few
// and short.
func listValues(vs []any) string {
	if len(vs) == 0 || len(vs) > describeValues {
		return ""
	}
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		switch v := v.(type) {
		case map[string]any, []any:
			return ""
		case string:
			// Checked before encoding: a schema's value may be 64 KiB,
			// encoded for every error.
			if len(v) > describeValueLen {
				return ""
			}
		case json.Number:
			if len(v) > describeValueLen {
				return ""
			}
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
	if len(s) <= 64 && tokenValue.MatchString(s) { // tokenValue allows 64
		return s
	}
	return fallback
}

// window cuts s to at most n bytes at a rune boundary, without a mark,
// and reports whether it cut.
func window(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n], true
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

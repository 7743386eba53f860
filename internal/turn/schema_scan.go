package turn

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Keywords the pre-scan treats specially, wherever they appear: it does not
// tell schema positions from data ones (a "$ref" inside an "enum" value is
// refused too), which only ever refuses more.
var refKeywords = map[string]bool{"$ref": true, "$dynamicRef": true, "$recursiveRef": true}

// knownDrafts are the metaschemas the compiler has built in (by host and
// path; http or https, with or without an empty fragment). No other
// $schema is accepted: any other would be loaded.
var knownDrafts = map[string]bool{
	"json-schema.org/schema":               true,
	"json-schema.org/draft/2020-12/schema": true,
	"json-schema.org/draft/2019-09/schema": true,
	"json-schema.org/draft-07/schema":      true,
	"json-schema.org/draft-06/schema":      true,
	"json-schema.org/draft-04/schema":      true,
}

// knownDraft reports whether a $schema value names a built-in draft.
func knownDraft(s string) bool {
	s = strings.TrimSuffix(s, "#")
	rest, ok := strings.CutPrefix(s, "https://")
	if !ok {
		if rest, ok = strings.CutPrefix(s, "http://"); !ok {
			return false
		}
	}
	return knownDrafts[rest]
}

// refKind describes a reference that is not in-document, for the error:
// its kind, never its text (a URL may carry credentials).
func refKind(ref string) string {
	u, err := url.Parse(ref)
	switch {
	case err != nil:
		return "not a valid URI reference"
	case u.Scheme == "":
		return "a relative reference, resolved against the schema's base URI to another document"
	case u.Scheme == "file":
		return "a file URL"
	case u.Scheme == "http" || u.Scheme == "https":
		return "an " + u.Scheme + " URL"
	case u.Scheme == "urn":
		return "a URN"
	case tokenValue.MatchString(u.Scheme):
		return "a " + u.Scheme + ": URL"
	}
	return "an absolute URL"
}

// pointerToken escapes a key for a JSON pointer.
func pointerToken(k string) string {
	if strings.ContainsAny(k, "~/") {
		k = strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
	}
	return k
}

// numberOK bounds a number's text: the compiler and validator turn numbers
// into exact rationals, and 1e-9999999 costs gigabytes (or crashes the
// compiler), 7e999 microseconds per comparison. 128 characters and
// exponents of ±400 hold every number a schema or a call needs (float64
// ends near 1e308).
func numberOK(s string) bool {
	_, ok := numberDigits(s)
	return ok
}

// numberDigits is how many digits a number has written out, if it is
// within numberOK's bounds.
func numberDigits(s string) (int, bool) {
	if len(s) > 128 {
		return 0, false
	}
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return len(s), true
	}
	e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
	if err != nil || e < -400 || e > 400 {
		return 0, false
	}
	return i + max(e, -e), true
}

// scanFrame is one open container of scanParameters.
type scanFrame struct {
	m    map[string]any
	keys []string // sorted, for a deterministic first finding
	a    []any
	i    int // the next child; the one being walked is i-1
}

// token is the pointer token of the child being walked, built only for a
// path that is reported.
func (f *scanFrame) token() string {
	if f.m != nil {
		return pointerToken(f.keys[f.i-1])
	}
	return strconv.Itoa(f.i - 1)
}

// scanParameters checks a tool's parameters within the limits before they
// are encoded or compiled, and returns how many values they have. The walk
// is iterative: no input can exhaust the stack. It enforces MaxDepth,
// MaxNodes, MaxRefs, MaxPatterns and MaxPatternBytes, a lower bound of
// MaxBytes (the exact size is checked on the canonical encoding), and
// refuses any reference that is not in-document and any $schema but the
// built-in drafts. Paths are built only for the problem it reports.
func scanParameters(params map[string]any, lim SchemaLimits) (int, *schemaProblem) {
	var (
		stack          []scanFrame
		nodes, refs    int
		patterns, size int
	)
	// path is the pointer of the value being walked: each open
	// container's token names its child being walked. memberPath is that
	// of a member of the innermost container, before it is walked.
	path := func() string {
		var b strings.Builder
		for i := range stack {
			b.WriteString("/")
			b.WriteString(stack[i].token())
		}
		return b.String()
	}
	memberPath := func(keys ...string) string {
		var b strings.Builder
		for i := range stack[:len(stack)-1] {
			b.WriteString("/")
			b.WriteString(stack[i].token())
		}
		for _, k := range keys {
			b.WriteString("/")
			b.WriteString(pointerToken(k))
		}
		return b.String()
	}
	// pattern counts a pattern at the member k (and the patternProperties
	// key p, if any) of the innermost container.
	pattern := func(re string, keys ...string) *schemaProblem {
		patterns++
		if patterns > lim.MaxPatterns {
			return tooLarge(memberPath(keys...), "more than %d patterns", lim.MaxPatterns)
		}
		if len(re) > lim.MaxPatternBytes {
			return tooLarge(memberPath(keys...), "a pattern of %d bytes, at most %d", len(re), lim.MaxPatternBytes)
		}
		return nil
	}
	// keyword checks a member of an object by its key.
	keyword := func(k string, v any) *schemaProblem {
		switch s, isString := v.(string); {
		case refKeywords[k] && isString:
			refs++
			if refs > lim.MaxRefs {
				return tooLarge(memberPath(k), "more than %d references", lim.MaxRefs)
			}
			if !strings.HasPrefix(s, "#") {
				return foreignRef(memberPath(k), "%s is %s; only references inside the schema (\"#/...\" or \"#anchor\") are allowed, and nothing is loaded", k, refKind(s))
			}
		case k == "$schema" && isString:
			if !knownDraft(s) {
				return foreignRef(memberPath(k), "$schema names an unknown metaschema (%s); only the JSON Schema drafts 4, 6, 7, 2019-09 and 2020-12 are built in, and nothing is loaded", refKind(s))
			}
		case k == "pattern" && isString:
			return pattern(s, k)
		case k == "patternProperties":
			if m, ok := v.(map[string]any); ok {
				for p := range m {
					if bad := pattern(p, k, p); bad != nil {
						return bad
					}
				}
			}
		}
		return nil
	}

	var next any = params
	for {
		nodes++
		if nodes > lim.MaxNodes {
			return nodes, tooLarge(path(), "more than %d values", lim.MaxNodes)
		}
		size++ // a separator
		switch v := next.(type) {
		case map[string]any:
			if len(stack) >= lim.MaxDepth {
				return nodes, tooLarge(path(), "nested deeper than %d levels", lim.MaxDepth)
			}
			f := scanFrame{m: v, keys: make([]string, 0, len(v))}
			for k := range v {
				f.keys = append(f.keys, k)
				size += len(k) + 3
			}
			slices.Sort(f.keys)
			stack = append(stack, f)
		case []any:
			if len(stack) >= lim.MaxDepth {
				return nodes, tooLarge(path(), "nested deeper than %d levels", lim.MaxDepth)
			}
			stack = append(stack, scanFrame{a: v})
		case string:
			size += len(v) + 2
		case json.Number:
			if !numberOK(string(v)) {
				return nodes, invalidSchema(path(), "a number out of range (more than 128 characters, or an exponent beyond ±400)")
			}
			size += len(v)
		case float64:
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nodes, invalidSchema(path(), "a number that is not finite")
			}
		case float32:
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return nodes, invalidSchema(path(), "a number that is not finite")
			}
		case nil, bool:
			size += 3
		case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		default:
			return nodes, invalidSchema(path(), "a value of a kind JSON does not have (%T)", v)
		}
		if size > lim.MaxBytes {
			return nodes, tooLarge("", "more than %d bytes", lim.MaxBytes)
		}
		// The next child of the innermost open container.
		found := false
		for len(stack) > 0 && !found {
			f := &stack[len(stack)-1]
			switch {
			case f.m != nil && f.i < len(f.keys):
				k := f.keys[f.i]
				f.i++
				if bad := keyword(k, f.m[k]); bad != nil {
					return nodes, bad
				}
				next, found = f.m[k], true
			case f.m == nil && f.i < len(f.a):
				next, found = f.a[f.i], true
				f.i++
			default:
				stack = stack[:len(stack)-1]
			}
		}
		if !found {
			return nodes, nil
		}
	}
}

// argumentsShape checks a call's arguments text before it is decoded: at
// most maxBytes, nested at most maxDepth. It scans bytes iteratively and
// does not validate the JSON (the decoder does): it only has to bound what
// the decoder recurses into. wire.CheckJSON does the same and more for
// records; this is the part the turn loop needs without its strictness.
func argumentsShape(args string, maxBytes, maxDepth int) error {
	if len(args) > maxBytes {
		return fmt.Errorf("the arguments are %d bytes, more than the %d a call may have", len(args), maxBytes)
	}
	depth, inString := 0, false
	for i := 0; i < len(args); i++ {
		c := args[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > maxDepth {
				return fmt.Errorf("the arguments nest deeper than %d levels", maxDepth)
			}
		case '}', ']':
			depth--
		}
	}
	return nil
}

package turn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/turnstream/turnstream/pkg/wire"
)

// ToolSchemas are the compiled parameter schemas of a request's tools, by
// tool name; a tool without parameters maps to nil.
type ToolSchemas map[string]*ToolSchema

// ToolSchema is one tool's compiled parameter schema with what bounds a
// check against it. It is read-only and shared by every request whose
// tool has the same parameters (SchemaCache).
type ToolSchema struct {
	schema *jsonschema.Schema
	cost   costTable
	limits SchemaLimits
}

// rootURL names every compiled schema. It is opaque (no file path, no
// host): nothing resolves against it but the document itself.
const rootURL = "tool:parameters"

// CompileTools compiles each tool's parameter schema within
// DefaultSchemaLimits, without a cache: the simple path for one-off use.
// A worker compiles through one SchemaCache, so a schema compiles once.
// A schema that cannot be used is the request's fault: the error is a
// *SchemaError wrapping ErrSchemaTooLarge, ErrSchemaInvalid or
// ErrSchemaRef.
func CompileTools(tools []wire.Tool) (ToolSchemas, error) {
	return compileTools(tools, DefaultSchemaLimits, func(_ [32]byte, canon []byte) (*ToolSchema, *schemaProblem) {
		return compileCanonical(canon, DefaultSchemaLimits)
	})
}

// compileTools checks each tool's parameters, encodes them canonically and
// has compile turn the encoding into a schema. Every check that needs no
// compiling runs for every tool before any is compiled: the limits of one
// schema and of their sum (MaxTotalBytes, MaxTotalNodes), and the fan-in
// as far as preAnalyze can tell it. A request refused for its last tool
// compiles none, and one accepted compiles at most MaxTotalBytes.
func compileTools(tools []wire.Tool, lim SchemaLimits, compile func(key [32]byte, canon []byte) (*ToolSchema, *schemaProblem)) (ToolSchemas, error) {
	canons := make([][]byte, len(tools))
	var totalBytes, totalNodes int
	for i, t := range tools {
		if t.Parameters == nil {
			continue
		}
		canon, nodes, problem := canonical(t.Parameters, lim)
		if problem == nil {
			totalBytes += len(canon)
			totalNodes += nodes
			switch {
			case totalBytes > lim.MaxTotalBytes:
				problem = tooLarge("", "the request's tool parameters total more than %d bytes (as canonical JSON, summed over its tools up to this one)", lim.MaxTotalBytes)
			case totalNodes > lim.MaxTotalNodes:
				problem = tooLarge("", "the request's tool parameters total more than %d values (summed over its tools up to this one)", lim.MaxTotalNodes)
			default:
				_, problem = preAnalyze(t.Parameters, lim.MaxArgumentDepth, lim.MaxFanIn)
			}
		}
		if problem != nil {
			return nil, problem.forTool(t.Name)
		}
		canons[i] = canon
	}
	out := make(ToolSchemas, len(tools))
	for i, t := range tools {
		if canons[i] == nil {
			// No parameters: nothing to validate, but the arguments are
			// still bounded by lim.
			out[t.Name] = &ToolSchema{limits: lim}
			continue
		}
		ts, problem := compile(contentKey(canons[i]), canons[i])
		if problem != nil {
			return nil, problem.forTool(t.Name)
		}
		out[t.Name] = ts
	}
	return out, nil
}

// canonical checks parameters within the limits (iteratively, before
// anything recursive) and encodes them as canonical JSON: sorted keys, no
// white space, the same bytes for the same schema whether the request was
// JSON or msgpack. It returns the values counted too.
func canonical(params map[string]any, lim SchemaLimits) ([]byte, int, *schemaProblem) {
	nodes, p := scanParameters(params, lim)
	if p != nil {
		return nil, nodes, p
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, nodes, invalidSchema("", "not encodable as JSON")
	}
	if len(b) > lim.MaxBytes {
		return nil, nodes, tooLarge("", "%d bytes, at most %d", len(b), lim.MaxBytes)
	}
	return b, nodes, nil
}

// refusingLoader is the compiler's loader: it loads nothing. The built-in
// metaschemas are the only documents besides the schema itself.
type refusingLoader struct{}

var errNoLoading = errors.New("turn: tool schemas load nothing")

func (refusingLoader) Load(string) (any, error) { return nil, errNoLoading }

// boundedRegexp is a pattern compiled within the limits, with its program
// size for the cost analysis.
type boundedRegexp struct {
	*regexp.Regexp
	insts int
}

// regexpEngine compiles patterns for the schema compiler within lim, and
// records in *problem the first one over a limit. The compiler asks for a
// pattern twice (the metaschema checks it is a regex, then the keyword
// compiles): it is compiled once.
func regexpEngine(lim SchemaLimits, problem **schemaProblem) jsonschema.RegexpEngine {
	type result struct {
		re  *boundedRegexp
		err error
	}
	seen := map[string]result{}
	return func(s string) (jsonschema.Regexp, error) {
		if r, ok := seen[s]; ok {
			if r.err != nil {
				return nil, r.err
			}
			return r.re, nil
		}
		re, err := compilePattern(s, lim, problem)
		seen[s] = result{re, err}
		if err != nil {
			return nil, err
		}
		return re, nil
	}
}

func compilePattern(s string, lim SchemaLimits, problem **schemaProblem) (*boundedRegexp, error) {
	fail := func(p *schemaProblem) (*boundedRegexp, error) {
		if *problem == nil {
			*problem = p
		}
		return nil, errors.New(p.detail)
	}
	if len(s) > lim.MaxPatternBytes {
		return fail(tooLarge("", "a pattern of %d bytes, at most %d", len(s), lim.MaxPatternBytes))
	}
	re, err := syntax.Parse(s, syntax.Perl)
	if err != nil {
		return nil, err
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil, err
	}
	if len(prog.Inst) > lim.MaxPatternInsts {
		return fail(tooLarge("", "a pattern that compiles to %d instructions, at most %d (counted repetitions multiply)", len(prog.Inst), lim.MaxPatternInsts))
	}
	rx, err := regexp.Compile(s)
	if err != nil {
		return nil, err
	}
	return &boundedRegexp{Regexp: rx, insts: len(prog.Inst)}, nil
}

// compileCanonical compiles a canonical schema document in a sandbox: no
// loader (only in-document references resolve; scanParameters refused the
// others before), patterns within the limits, and a recovered panic, as
// the compiler is not ours. Then it bounds the cost of checks against the
// result (analyze).
func compileCanonical(canon []byte, lim SchemaLimits) (ts *ToolSchema, problem *schemaProblem) {
	defer func() {
		if v := recover(); v != nil {
			ts, problem = nil, invalidSchema("", "the schema compiler failed on it")
		}
	}()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(canon))
	if err != nil {
		return nil, invalidSchema("", "not JSON")
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refusingLoader{})
	var patternProblem *schemaProblem
	c.UseRegexpEngine(regexpEngine(lim, &patternProblem))
	if err := c.AddResource(rootURL, doc); err != nil {
		return nil, invalidSchema("", "cannot be added to the compiler")
	}
	s, err := c.Compile(rootURL)
	if err != nil {
		if patternProblem != nil {
			return nil, patternProblem
		}
		return nil, compileProblem(err)
	}
	table, problem := analyze(s, lim.MaxArgumentDepth, lim.MaxFanIn)
	if problem != nil {
		return nil, problem
	}
	return &ToolSchema{schema: s, cost: table, limits: lim}, nil
}

// compileProblem classifies a compiler error. Its text names places in the
// schema, never the client's values beyond keyword names.
func compileProblem(err error) *schemaProblem {
	var (
		load    *jsonschema.LoadURLError
		meta    *jsonschema.SchemaValidationError
		ptr     *jsonschema.JSONPointerNotFoundError
		badPtr  *jsonschema.InvalidJsonPointerError
		anchor  *jsonschema.AnchorNotFoundError
		dupID   *jsonschema.DuplicateIDError
		dupAnch *jsonschema.DuplicateAnchorError
	)
	switch {
	case errors.As(err, &load):
		return foreignRef("", "it refers to %s outside the schema; only in-document references are resolved, and nothing is loaded", refKind(load.URL))
	case errors.As(err, &meta):
		var verr *jsonschema.ValidationError
		if errors.As(meta.Err, &verr) {
			return invalidSchema("", "not a valid JSON Schema: %s", describe(verr))
		}
	case errors.As(err, &ptr):
		return invalidSchema(fragmentOf(ptr.URL), "a reference points to nothing in the schema")
	case errors.As(err, &badPtr):
		return invalidSchema(fragmentOf(badPtr.URL), "a reference is not a valid JSON pointer")
	case errors.As(err, &anchor):
		return invalidSchema("", "a reference names an anchor the schema does not declare")
	case errors.As(err, &dupID):
		return invalidSchema(clip(dupID.Ptr2, 2*describeValueLen), "two subschemas declare the same $id")
	case errors.As(err, &dupAnch):
		return invalidSchema(clip(dupAnch.Ptr2, 2*describeValueLen), "two subschemas declare the same anchor")
	}
	return invalidSchema("", "does not compile as a JSON Schema")
}

func fragmentOf(u string) string {
	if i := strings.IndexByte(u, '#'); i >= 0 {
		return clip(u[i+1:], 2*describeValueLen)
	}
	return ""
}

// Check validates a call's arguments against its tool's schema. The
// error is written for the model, which may correct its call: it names
// the place in the arguments and the rule, never a value. The work is
// bounded before it starts: the arguments' size and depth, then the cost
// the schema's analysis predicts for their shape.
func (ts ToolSchemas) Check(name, arguments string) error {
	lim := DefaultSchemaLimits
	s := ts[name]
	if s != nil {
		lim = s.limits
	}
	if err := argumentsShape(arguments, lim.MaxArgumentBytes, lim.MaxArgumentDepth); err != nil {
		return err
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(arguments))
	if err != nil {
		return fmt.Errorf("the arguments are not valid JSON")
	}
	if _, ok := doc.(map[string]any); !ok {
		return fmt.Errorf("the arguments are not a JSON object")
	}
	if s == nil || s.schema == nil {
		return nil
	}
	sh, at, ok := measure(doc, lim.MaxArgumentDepth)
	if !ok {
		return fmt.Errorf("the arguments have a number out of range at %s (more than 128 characters, or an exponent beyond ±400)", instancePointer(at))
	}
	if work, budget := s.cost.check(sh), uint64(lim.MaxCheckCost)*ticksPerUnit; work > budget {
		return fmt.Errorf("the arguments are too large to check against the tool's parameters (about %d units of work, at most %d): send fewer or smaller values", work/ticksPerUnit, lim.MaxCheckCost)
	}
	return s.validate(doc)
}

// validate runs the compiler's validator, recovering a panic of it.
func (s *ToolSchema) validate(doc any) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("the arguments could not be checked against the tool's parameters")
		}
	}()
	if err := s.schema.Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return fmt.Errorf("the arguments do not match the tool's parameters: %s", describe(ve))
		}
		return fmt.Errorf("the arguments do not match the tool's parameters")
	}
	return nil
}

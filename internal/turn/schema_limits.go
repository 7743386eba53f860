package turn

import (
	"errors"
	"fmt"

	"github.com/turnstream/turnstream/pkg/wire"
)

// SchemaLimits bound a tool's parameter schema before it is compiled and
// a call's arguments before they are checked against it. They are checked
// by iterative walks, before anything recursive (encoding, compiling,
// validating) touches the input, and chosen so that, within them, the
// worst schema found compiles in about 0.15 s and the worst check runs in
// about 0.1 s with under 50 MB of garbage, on one core
// (BenchmarkCompileWorstCase, BenchmarkCheckWorstCase). A zero field
// takes its default; a negative one is invalid.
type SchemaLimits struct {
	// MaxBytes caps one tool's parameters, as canonical JSON (sorted keys,
	// no white space). Default 64 KiB.
	MaxBytes int
	// MaxDepth caps the nesting of objects and arrays in a schema: a
	// scalar has depth 0, {} and [] depth 1. Default 32.
	MaxDepth int
	// MaxNodes caps the JSON values of a schema (objects, arrays and
	// scalars; keys not counted). The compiler's work grows with the
	// square of its subschemas: 5,000 compile in about 0.1 s. Default
	// 5,000.
	MaxNodes int
	// MaxRefs caps the references ($ref, $dynamicRef, $recursiveRef) of a
	// schema. Each may point anywhere in the document, and a pointer to a
	// part the compiler has not met yet costs it a pass over the document.
	// Default 256.
	MaxRefs int
	// MaxPatterns caps the regular expressions of a schema ("pattern"
	// values and "patternProperties" keys). Default 128.
	MaxPatterns int
	// MaxPatternBytes caps the length of one regular expression. Default
	// 1 KiB.
	MaxPatternBytes int
	// MaxPatternInsts caps the compiled size of one regular expression in
	// instructions of Go's regexp program: matching costs up to that much
	// per byte of input, and a short pattern with counted repetitions
	// ("(a|b){0,1000}") compiles to thousands. Default 2,000.
	MaxPatternInsts int
	// MaxFanIn caps how many schema evaluations one place of the
	// arguments can receive, through in-place applicators (allOf, anyOf,
	// oneOf, $ref, ...) and applicators that reach the same child from
	// several keywords. A schema whose references double at each level
	// needs 2^n of them, then every call is too expensive to check: it is
	// rejected when compiled. Default 1,000.
	MaxFanIn int

	// MaxTotalBytes caps the canonical JSON bytes of all of a request's
	// tool parameters, summed (a schema offered under two tool names
	// counts twice). A compiled schema holds some 40 to 90 times its
	// canonical size for the whole turn, and compiling costs with the
	// size: the default keeps a request under about 12 MiB of compiled
	// schemas and 0.3 s of compiling, whatever its number of tools. It is
	// checked, with MaxTotalNodes, before any tool is compiled. Default
	// 128 KiB.
	MaxTotalBytes int
	// MaxTotalNodes caps the JSON values of all of a request's tool
	// parameters, summed, as MaxNodes counts them. Default 10,000 (two
	// schemas at MaxNodes).
	MaxTotalNodes int

	// MaxArgumentBytes caps a call's arguments (JSON text). Default 1 MiB.
	MaxArgumentBytes int
	// MaxArgumentDepth caps the nesting of a call's arguments. Default 64.
	MaxArgumentDepth int
	// MaxCheckCost caps the work of checking one call's arguments against
	// its schema, in units of one failing schema evaluation at one place
	// of the arguments (about 1.5 µs and under 1 KB with its error; a
	// passing one costs less); matching patterns, comparing enums and
	// scanning long strings count in proportion. The cost is bounded from
	// the compiled schema and the arguments' shape before validation
	// starts; a call over it gets a planning error the model can act on.
	// Default 50,000 (a check of at most about 100 ms).
	MaxCheckCost int
}

// DefaultSchemaLimits are the limits a zero SchemaLimits field takes.
var DefaultSchemaLimits = SchemaLimits{
	MaxBytes:         wire.DefaultLimits.MaxToolSchemaBytes, // the request's own cap on one schema
	MaxDepth:         32,
	MaxNodes:         5_000,
	MaxRefs:          256,
	MaxPatterns:      128,
	MaxPatternBytes:  1 << 10,
	MaxPatternInsts:  2_000,
	MaxFanIn:         1_000,
	MaxTotalBytes:    128 << 10,
	MaxTotalNodes:    10_000,
	MaxArgumentBytes: 1 << 20,
	MaxArgumentDepth: 64,
	MaxCheckCost:     50_000,
}

// maxArgumentDepth is the largest MaxArgumentDepth accepted: the cost
// analysis keeps a table per level.
const maxArgumentDepth = 1_000

// Validate reports a negative limit, or an argument depth over 1,000.
func (l SchemaLimits) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int
	}{
		{"max_bytes", l.MaxBytes}, {"max_depth", l.MaxDepth}, {"max_nodes", l.MaxNodes},
		{"max_refs", l.MaxRefs}, {"max_patterns", l.MaxPatterns}, {"max_pattern_bytes", l.MaxPatternBytes},
		{"max_pattern_insts", l.MaxPatternInsts}, {"max_fan_in", l.MaxFanIn},
		{"max_total_bytes", l.MaxTotalBytes}, {"max_total_nodes", l.MaxTotalNodes},
		{"max_argument_bytes", l.MaxArgumentBytes}, {"max_argument_depth", l.MaxArgumentDepth},
		{"max_check_cost", l.MaxCheckCost},
	} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("turn: schema limit %s is negative (%d)", f.name, f.v))
		}
	}
	if l.MaxArgumentDepth > maxArgumentDepth {
		errs = append(errs, fmt.Errorf("turn: schema limit max_argument_depth %d is over %d", l.MaxArgumentDepth, maxArgumentDepth))
	}
	return errors.Join(errs...)
}

// withDefaults fills zero fields from DefaultSchemaLimits.
func (l SchemaLimits) withDefaults() SchemaLimits {
	d := DefaultSchemaLimits
	pick := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	pick(&l.MaxBytes, d.MaxBytes)
	pick(&l.MaxDepth, d.MaxDepth)
	pick(&l.MaxNodes, d.MaxNodes)
	pick(&l.MaxRefs, d.MaxRefs)
	pick(&l.MaxPatterns, d.MaxPatterns)
	pick(&l.MaxPatternBytes, d.MaxPatternBytes)
	pick(&l.MaxPatternInsts, d.MaxPatternInsts)
	pick(&l.MaxFanIn, d.MaxFanIn)
	pick(&l.MaxTotalBytes, d.MaxTotalBytes)
	pick(&l.MaxTotalNodes, d.MaxTotalNodes)
	pick(&l.MaxArgumentBytes, d.MaxArgumentBytes)
	pick(&l.MaxArgumentDepth, d.MaxArgumentDepth)
	pick(&l.MaxCheckCost, d.MaxCheckCost)
	return l
}

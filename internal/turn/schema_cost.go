package turn

import (
	"encoding/json"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The cost of checking arguments against a compiled schema is bounded
// before the check runs, from the schema (once, when it compiles) and from
// the arguments' shape (for each call). A validator evaluates schemas at
// places of the arguments: the root schema at the root, and every
// applicator one more schema, either at the same place (allOf, anyOf,
// oneOf, not, if/then/else, $ref, $dynamicRef, dependentSchemas) or at a
// child (properties, items, ...). For each depth k, the analysis bounds
// what all evaluations at one place k levels below the root can cost, per
// measure of that place: a fixed part per place, a part per byte of its
// strings (patterns, formats), per member or element (the validator's
// loops over them) and per node below it (uniqueItems). Summed over the
// arguments' places, that bounds the whole check, whatever the validator
// short-circuits. In-place applicators must form no cycle (a schema that
// refers to itself without descending into the arguments, which only ever
// fails); references through children are fine and bounded by the
// arguments' depth.

// Ticks are the unit of the analysis, about 2 ns of validator time each
// (measured with BenchmarkCheckWorstCase); a MaxCheckCost unit is one
// schema evaluation that fails, about 1.5 µs with its error.
const (
	ticksPerUnit = tickEval

	tickEval      = 768  // one evaluation: type, bounds, bookkeeping, its error
	tickBool      = 64   // a boolean schema
	tickNumeric   = 512  // numeric keywords turn the number into a rational
	tickDigit     = 8    // per decimal digit of a rational they compute with
	tickScalar    = 4    // one scalar of an enum or const compared
	tickNumber    = 384  // one number of an enum or const (compared as rationals)
	tickNode      = 160  // one node of an enum or const container compared
	tickRequired  = 8    // one required or dependent property looked up
	tickMember    = 24   // per member or element: the validator's loops
	tickRegexCall = 64   // per member: one patternProperties match started
	tickInst      = 2    // per byte per instruction of a pattern program
	tickFormat    = 16   // per byte: a format assertion
	tickFormatRE  = 1024 // per byte: the "regex" format compiles the string
	tickLength    = 2    // per byte: rune counting for minLength/maxLength
	tickUnique    = 3072 // per node below an array: uniqueItems compares pairs of small arrays, as rationals for numbers
	tickStep      = 1    // per in-place level: the validator's cycle check
	tickDepth     = 32   // per evaluation per level of depth: its error's location
	costSaturated = math.MaxUint64 / 4
)

// cost bounds the evaluations reaching one place of the arguments.
type cost struct {
	evals   uint64 // how many (MaxFanIn)
	perNode uint64 // ticks for the place itself
	perByte uint64 // ticks per byte of its string (or key)
	perWide uint64 // ticks per member or element, for a container
	perDeep uint64 // ticks per node below it, for an array
}

func sat(a, b uint64) uint64 {
	if s := a + b; s >= a && s < costSaturated {
		return s
	}
	return costSaturated
}

func (c cost) add(o cost) cost {
	return cost{sat(c.evals, o.evals), sat(c.perNode, o.perNode), sat(c.perByte, o.perByte), sat(c.perWide, o.perWide), sat(c.perDeep, o.perDeep)}
}

func (c cost) max(o cost) cost {
	return cost{max(c.evals, o.evals), max(c.perNode, o.perNode), max(c.perByte, o.perByte), max(c.perWide, o.perWide), max(c.perDeep, o.perDeep)}
}

// costTable is, for each depth k from 0 (the arguments object) to the
// arguments' maximum depth, the bound of evaluations at one place k levels
// down.
type costTable []cost

// shape measures the arguments, per depth, for a costTable.
type shape struct {
	nodes, bytes, wide []uint64
}

// check bounds the work of validating arguments of shape sh, in ticks.
func (t costTable) check(sh shape) uint64 {
	var total, below uint64
	for k := len(t) - 1; k >= 0; k-- {
		if k >= len(sh.nodes) {
			continue
		}
		below = sat(below, sh.nodes[k]) // nodes at depth k or deeper
		c := t[k]
		total = sat(total, mul(sat(c.perNode, mul(c.evals, uint64(k)*tickDepth)), sh.nodes[k]))
		total = sat(total, mul(c.perByte, sh.bytes[k]))
		total = sat(total, mul(c.perWide, sh.wide[k]))
		total = sat(total, mul(c.perDeep, below))
	}
	return total
}

func mul(a, b uint64) uint64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a >= costSaturated/b {
		return costSaturated
	}
	return a * b
}

// measure walks decoded arguments iteratively and returns their shape;
// a number out of range is reported by its place, as the tokens of its
// path (formatted only then, by the caller). A number's bytes are its
// digits written out (7e300 has 301). Keys count as string places one
// level below their object (propertyNames evaluates them there), and
// their bytes also at the object's level (patternProperties matches them
// there).
//
// Its memory is O(size of the arguments) with a small constant, whatever
// their shape: one frame per open container (the arguments' depth), and
// the keys of the open objects, each once (16 bytes a key, the strings
// shared with the decoded arguments). Nothing is built per value: a path
// exists only for the one number it reports.
func measure(v any, depth int) (shape, []string, bool) {
	levels := depth + 2
	counts := make([]uint64, 3*levels)
	sh := shape{nodes: counts[:levels:levels], bytes: counts[levels : 2*levels : 2*levels], wide: counts[2*levels:]}
	type frame struct {
		m     map[string]any
		a     []any
		start int // the object's keys are keys[start:start+len(m)]
		next  int // the next member or element to walk
		level int
	}
	var (
		frames []frame
		keys   []string
	)
	// path is the place of the value being walked: each open container's
	// member or element before its next.
	path := func() []string {
		out := make([]string, len(frames))
		for i, f := range frames {
			if f.m != nil {
				out[i] = keys[f.start+f.next-1]
			} else {
				out[i] = itoa(f.next - 1)
			}
		}
		return out
	}
	next, level := v, 0
	for {
		k := min(level, depth+1)
		sh.nodes[k]++
		switch v := next.(type) {
		case map[string]any:
			sh.wide[k] += uint64(len(v))
			start := len(keys)
			keys = slices.Grow(keys, len(v))
			for key := range v {
				kb := uint64(len(key))
				sh.bytes[k] += kb
				if k+1 < levels {
					sh.nodes[k+1]++
					sh.bytes[k+1] += kb
				}
				keys = append(keys, key)
			}
			frames = append(frames, frame{m: v, start: start, level: level})
		case []any:
			sh.wide[k] += uint64(len(v))
			frames = append(frames, frame{a: v, level: level})
		case string:
			sh.bytes[k] += uint64(len(v))
		case json.Number:
			digits, ok := numberDigits(string(v))
			if !ok {
				return sh, path(), false
			}
			sh.bytes[k] += uint64(digits)
		}
		// The next child of the innermost open container.
		found := false
		for len(frames) > 0 && !found {
			f := &frames[len(frames)-1]
			switch {
			case f.m != nil && f.next < len(f.m):
				next, level, found = f.m[keys[f.start+f.next]], f.level+1, true
				f.next++
			case f.m == nil && f.next < len(f.a):
				next, level, found = f.a[f.next], f.level+1, true
				f.next++
			default:
				if f.m != nil {
					keys = keys[:f.start]
				}
				frames = frames[:len(frames)-1]
			}
		}
		if !found {
			return sh, nil, true
		}
	}
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	var b [20]byte
	n := len(b)
	for i > 0 {
		n--
		b[n] = digits[i%10]
		i /= 10
	}
	return string(b[n:])
}

// node is one compiled schema in the analysis.
type node struct {
	own     cost
	inSum   []int   // in-place applicators, each evaluated
	inMax   [][]int // in-place, one of each group evaluated ($dynamicRef targets)
	propMax []int   // named properties: one of them per member
	objSum  []int   // patternProperties, additionalProperties, unevaluatedProperties, propertyNames
	arrMax  [][]int // prefixItems, items arrays (draft 4 to 2019-09): one of each per element
	arrSum  []int   // items, additionalItems, contains, unevaluatedItems
}

// analyze computes a compiled schema's cost table for arguments nested at
// most depth levels. It fails on an in-place cycle, an unsupported dynamic
// $recursiveRef, or a fan-in over maxFanIn.
func analyze(root *jsonschema.Schema, depth, maxFanIn int) (costTable, *schemaProblem) {
	// Number the schemas reachable from the root.
	index := map[*jsonschema.Schema]int{}
	var all []*jsonschema.Schema
	add := func(s *jsonschema.Schema) int {
		if i, ok := index[s]; ok {
			return i
		}
		index[s] = len(all)
		all = append(all, s)
		return len(all) - 1
	}
	add(root)
	for i := 0; i < len(all); i++ {
		for _, c := range children(all[i]) {
			add(c)
		}
	}
	anchors := map[string][]int{}
	for i, s := range all {
		if s.DynamicAnchor != "" {
			anchors[s.DynamicAnchor] = append(anchors[s.DynamicAnchor], i)
		}
	}

	nodes := make([]node, len(all))
	ids := func(ss []*jsonschema.Schema) []int {
		out := make([]int, 0, len(ss))
		for _, s := range ss {
			if s != nil {
				out = append(out, index[s])
			}
		}
		return out
	}
	one := func(list *[]int, s *jsonschema.Schema) {
		if s != nil {
			*list = append(*list, index[s])
		}
	}
	for i, s := range all {
		n := &nodes[i]
		n.own = ownCost(s)
		one(&n.inSum, s.Ref)
		if s.RecursiveRef != nil {
			if s.RecursiveRef.RecursiveAnchor {
				return nil, invalidSchema(pointerOf(s), "a $recursiveRef to a $recursiveAnchor (draft 2019-09 dynamic recursion) is not supported; use $dynamicRef or $ref")
			}
			one(&n.inSum, s.RecursiveRef)
		}
		if d := s.DynamicRef; d != nil && d.Ref != nil {
			group := []int{index[d.Ref]}
			if d.Anchor != "" {
				group = append(group, anchors[d.Anchor]...)
			}
			n.inMax = append(n.inMax, group)
		}
		n.inSum = append(n.inSum, ids(s.AllOf)...)
		n.inSum = append(n.inSum, ids(s.AnyOf)...)
		n.inSum = append(n.inSum, ids(s.OneOf)...)
		n.inSum = append(n.inSum, ids([]*jsonschema.Schema{s.Not, s.If, s.Then, s.Else})...)
		for _, d := range s.DependentSchemas {
			one(&n.inSum, d)
		}
		for _, d := range s.Dependencies {
			if d, ok := d.(*jsonschema.Schema); ok {
				one(&n.inSum, d)
			}
		}
		for _, p := range s.Properties {
			one(&n.propMax, p)
		}
		for _, p := range s.PatternProperties {
			one(&n.objSum, p)
		}
		if a, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
			one(&n.objSum, a)
		}
		one(&n.objSum, s.UnevaluatedProperties)
		one(&n.objSum, s.PropertyNames)
		if len(s.PrefixItems) > 0 {
			n.arrMax = append(n.arrMax, ids(s.PrefixItems))
		}
		switch items := s.Items.(type) {
		case *jsonschema.Schema:
			one(&n.arrSum, items)
		case []*jsonschema.Schema:
			n.arrMax = append(n.arrMax, ids(items))
		}
		one(&n.arrSum, s.Items2020)
		if a, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
			one(&n.arrSum, a)
		}
		one(&n.arrSum, s.Contains)
		one(&n.arrSum, s.UnevaluatedItems)
		one(&n.arrSum, s.ContentSchema)
	}

	return solve(nodes, depth, maxFanIn, func(i int) string { return pointerOf(all[i]) })
}

// solve computes the cost table of the schema graph nodes (the root is
// nodes[0]), failing on an in-place cycle (named by where) or a fan-in
// over maxFanIn.
func solve(nodes []node, depth, maxFanIn int, where func(int) string) (costTable, *schemaProblem) {
	order, cyclic := inPlaceOrder(nodes)
	if cyclic >= 0 {
		return nil, cycleProblem(where(cyclic))
	}
	// The validator's cycle check walks the in-place chain at each
	// evaluation: its longest length adds to each one.
	height := make([]int, len(nodes))
	longest := 0
	for _, i := range order {
		h := 1
		for _, c := range inPlace(&nodes[i]) {
			h = max(h, height[c]+1)
		}
		height[i] = h
		longest = max(longest, h)
	}
	for i := range nodes {
		nodes[i].own.perNode = sat(nodes[i].own.perNode, uint64(longest)*tickStep)
	}

	table := make(costTable, depth+1)
	prev, cur := make([]cost, len(nodes)), make([]cost, len(nodes))
	for k := 0; k <= depth; k++ {
		for _, i := range order {
			n := &nodes[i]
			var c cost
			if k == 0 {
				c = n.own
			}
			for _, j := range n.inSum {
				c = c.add(cur[j])
			}
			for _, g := range n.inMax {
				c = c.add(maxOf(cur, g))
			}
			if k > 0 {
				obj := maxOf(prev, n.propMax)
				for _, j := range n.objSum {
					obj = obj.add(prev[j])
				}
				var arr cost
				for _, g := range n.arrMax {
					arr = arr.max(maxOf(prev, g))
				}
				for _, j := range n.arrSum {
					arr = arr.add(prev[j])
				}
				c = c.add(obj.max(arr))
			}
			cur[i] = c
		}
		table[k] = cur[0]
		if table[k].evals > uint64(maxFanIn) {
			return nil, fanInProblem(k, table[k].evals, maxFanIn)
		}
		// Past the root, a level depends on the one above alone: once
		// two are equal, so are all below.
		if k >= 2 && slices.Equal(cur, prev) {
			for r := k + 1; r <= depth; r++ {
				table[r] = cur[0]
			}
			break
		}
		prev, cur = cur, prev
	}
	return table, nil
}

// solveFanIn is solve for the evaluations alone (the same counts), for
// the pre-analysis: some five times less work a level.
func solveFanIn(nodes []node, depth, maxFanIn int, where func(int) string) ([]uint64, *schemaProblem) {
	order, cyclic := inPlaceOrder(nodes)
	if cyclic >= 0 {
		return nil, cycleProblem(where(cyclic))
	}
	maxIn := func(cs []uint64, ids []int) uint64 {
		var m uint64
		for _, j := range ids {
			m = max(m, cs[j])
		}
		return m
	}
	table := make([]uint64, depth+1)
	prev, cur := make([]uint64, len(nodes)), make([]uint64, len(nodes))
	for k := 0; k <= depth; k++ {
		for _, i := range order {
			n := &nodes[i]
			var c uint64
			if k == 0 {
				c = n.own.evals
			}
			for _, j := range n.inSum {
				c = sat(c, cur[j])
			}
			for _, g := range n.inMax {
				c = sat(c, maxIn(cur, g))
			}
			if k > 0 {
				obj := maxIn(prev, n.propMax)
				for _, j := range n.objSum {
					obj = sat(obj, prev[j])
				}
				var arr uint64
				for _, g := range n.arrMax {
					arr = max(arr, maxIn(prev, g))
				}
				for _, j := range n.arrSum {
					arr = sat(arr, prev[j])
				}
				c = sat(c, max(obj, arr))
			}
			cur[i] = c
		}
		table[k] = cur[0]
		if table[k] > uint64(maxFanIn) {
			return nil, fanInProblem(k, table[k], maxFanIn)
		}
		if k >= 2 && slices.Equal(cur, prev) {
			for r := k + 1; r <= depth; r++ {
				table[r] = cur[0]
			}
			break
		}
		prev, cur = cur, prev
	}
	return table, nil
}

func cycleProblem(at string) *schemaProblem {
	return invalidSchema(at, "a reference cycle that never descends into the arguments (a schema applies itself in place), which no value can satisfy")
}

func fanInProblem(k int, evals uint64, maxFanIn int) *schemaProblem {
	place := "the arguments object"
	if k > 0 {
		place = "a value " + itoa(k) + " levels into the arguments"
	}
	return tooLarge("", "too expensive to check: %s would be evaluated against %s schemas, at most %d (references or applicators that multiply)", place, fanIn(evals), maxFanIn)
}

func fanIn(n uint64) string {
	if n >= costSaturated {
		return "astronomically many"
	}
	if n > math.MaxInt32 {
		return "billions of"
	}
	return "up to " + itoa(int(n))
}

func maxOf(cs []cost, ids []int) cost {
	var m cost
	for _, j := range ids {
		m = m.max(cs[j])
	}
	return m
}

func inPlace(n *node) []int {
	if len(n.inMax) == 0 {
		return n.inSum
	}
	out := append([]int(nil), n.inSum...)
	for _, g := range n.inMax {
		out = append(out, g...)
	}
	return out
}

// inPlaceOrder orders the nodes so that in-place successors come before
// their applicators, iteratively. It returns a node on a cycle, or -1.
func inPlaceOrder(nodes []node) ([]int, int) {
	const (
		white = iota
		grey
		black
	)
	color := make([]uint8, len(nodes))
	order := make([]int, 0, len(nodes))
	type frame struct {
		i, next int
		succ    []int
	}
	for start := range nodes {
		if color[start] != white {
			continue
		}
		stack := []frame{{i: start, succ: inPlace(&nodes[start])}}
		color[start] = grey
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			if f.next == len(f.succ) {
				color[f.i] = black
				order = append(order, f.i)
				stack = stack[:len(stack)-1]
				continue
			}
			c := f.succ[f.next]
			f.next++
			switch color[c] {
			case grey:
				return nil, c
			case white:
				color[c] = grey
				stack = append(stack, frame{i: c, succ: inPlace(&nodes[c])})
			}
		}
	}
	return order, -1
}

// children lists the schemas a compiled schema refers to, for numbering.
func children(s *jsonschema.Schema) []*jsonschema.Schema {
	out := []*jsonschema.Schema{s.Ref, s.RecursiveRef, s.Not, s.If, s.Then, s.Else,
		s.PropertyNames, s.UnevaluatedProperties, s.Contains, s.Items2020, s.UnevaluatedItems, s.ContentSchema}
	if s.DynamicRef != nil {
		out = append(out, s.DynamicRef.Ref)
	}
	out = append(out, s.AllOf...)
	out = append(out, s.AnyOf...)
	out = append(out, s.OneOf...)
	out = append(out, s.PrefixItems...)
	for _, c := range s.DependentSchemas {
		out = append(out, c)
	}
	for _, c := range s.Dependencies {
		if c, ok := c.(*jsonschema.Schema); ok {
			out = append(out, c)
		}
	}
	for _, c := range s.Properties {
		out = append(out, c)
	}
	for _, c := range s.PatternProperties {
		out = append(out, c)
	}
	if c, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
		out = append(out, c)
	}
	if c, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
		out = append(out, c)
	}
	switch items := s.Items.(type) {
	case *jsonschema.Schema:
		out = append(out, items)
	case []*jsonschema.Schema:
		out = append(out, items...)
	}
	kept := out[:0]
	for _, c := range out {
		if c != nil {
			kept = append(kept, c)
		}
	}
	return kept
}

// ownCost is what evaluating s at one place costs by itself.
func ownCost(s *jsonschema.Schema) cost {
	c := cost{evals: 1}
	if s.Bool != nil {
		c.perNode = tickBool
		return c
	}
	c.perNode = tickEval
	if s.Maximum != nil || s.Minimum != nil || s.ExclusiveMaximum != nil || s.ExclusiveMinimum != nil || s.MultipleOf != nil ||
		(s.Types != nil && slices.Contains(s.Types.ToStrings(), "integer")) {
		// Bounds and the integer check compute with the number as an
		// exact rational: the longer its digits (a number's "bytes", see
		// measure) and the bounds', the slower.
		c.perNode += tickNumeric
		c.perByte += tickDigit
		for _, r := range []*big.Rat{s.Maximum, s.Minimum, s.ExclusiveMaximum, s.ExclusiveMinimum, s.MultipleOf} {
			if r != nil {
				c.perNode = sat(c.perNode, uint64(r.Num().BitLen()+r.Denom().BitLen())/3*tickDigit)
			}
		}
	}
	if s.Enum != nil {
		for _, v := range s.Enum.Values {
			c.perNode = sat(c.perNode, valueTicks(v))
		}
	}
	if s.Const != nil {
		c.perNode = sat(c.perNode, valueTicks(*s.Const))
	}
	deps := len(s.Required) + len(s.Dependencies) + len(s.DependentSchemas)
	for _, r := range s.DependentRequired {
		deps += 1 + len(r)
	}
	for _, d := range s.Dependencies {
		if r, ok := d.([]string); ok {
			deps += len(r)
		}
	}
	c.perNode = sat(c.perNode, uint64(deps)*tickRequired)

	if p, ok := s.Pattern.(*boundedRegexp); ok {
		c.perByte += uint64(p.insts) * tickInst
	} else if s.Pattern != nil {
		c.perByte += uint64(DefaultSchemaLimits.MaxPatternInsts) * tickInst
	}
	if s.Format != nil {
		if s.Format.Name == "regex" {
			c.perByte += tickFormatRE
		} else {
			c.perByte += tickFormat
		}
	}
	if s.MinLength != nil || s.MaxLength != nil {
		c.perByte += tickLength
	}
	c.perWide = tickMember
	for re := range s.PatternProperties {
		c.perWide += tickRegexCall
		if p, ok := re.(*boundedRegexp); ok {
			c.perByte += uint64(p.insts) * tickInst
		} else {
			c.perByte += uint64(DefaultSchemaLimits.MaxPatternInsts) * tickInst
		}
	}
	if s.UniqueItems {
		c.perDeep = tickUnique
	}
	return c
}

// valueTicks bounds comparing an argument value with v (enum, const).
func valueTicks(v any) uint64 {
	switch v := v.(type) {
	case map[string]any, []any:
		n := uint64(0)
		stack := []any{v}
		for len(stack) > 0 {
			x := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			n++
			switch x := x.(type) {
			case map[string]any:
				for _, c := range x {
					stack = append(stack, c)
				}
			case []any:
				stack = append(stack, x...)
			case string:
				n += uint64(len(x)) / 64
			}
		}
		return n * tickNode
	case string:
		return tickScalar + uint64(len(v))/32
	case json.Number, float64, float32, int, int64, uint64:
		return tickNumber
	}
	return tickScalar
}

// pointerOf is the JSON pointer of a compiled schema in its document.
func pointerOf(s *jsonschema.Schema) string {
	for i := 0; i < len(s.Location); i++ {
		if s.Location[i] == '#' {
			return s.Location[i+1:]
		}
	}
	return ""
}

// preAnalyze bounds, before a schema is compiled, the fan-in analyze will
// find, so that a schema whose references multiply is refused without
// compiling it (nor the request's other tools). It reads the decoded
// parameters, for the common case of a draft 2020-12 document without
// "$id" anywhere, whose references all resolve in the document by JSON
// pointer. It follows only applicators whose compiled schema it is sure of
// (not $dynamicRef, $recursiveRef, anchors, contentSchema, nor a pointer
// it cannot resolve as the compiler does), so its counts are at most
// analyze's: what it refuses, analyze would refuse after compiling, and
// what it lets through, analyze still checks. A document it cannot read
// it lets through unchecked (a nil table). Its work is linear in the schema's
// values, plus the table: at most (depth+1) times the subschemas and
// applicators, one word each.
func preAnalyze(params map[string]any, depth, maxFanIn int) ([]uint64, *schemaProblem) {
	count, ok := preAnalyzable(params)
	if !ok {
		return nil, nil
	}
	// A subschema's place, for a message only: its parent and the
	// keyword (and member) under it, or the pointer it was reached by.
	type place struct {
		parent int
		ptr    string // the fragment of a $ref, when parent < 0
		kw     string
		member string
		named  bool // member is set
	}
	var (
		nodes  = make([]node, 0, count+1)
		places = make([]place, 0, count+1)
		maps   = make([]map[string]any, 0, count+1) // of each node; nil for the boolean leaf
		index  = make(map[unsafe.Pointer]int, count)
		leaf   = -1 // one node for every boolean schema: it applies nothing
	)
	add := func(v any, at place) int {
		switch v := v.(type) {
		case map[string]any:
			id := reflect.ValueOf(v).UnsafePointer()
			if i, ok := index[id]; ok {
				return i
			}
			index[id] = len(nodes)
			nodes = append(nodes, node{own: cost{evals: 1}})
			places = append(places, at)
			maps = append(maps, v)
			return len(nodes) - 1
		case bool:
			if leaf < 0 {
				leaf = len(nodes)
				nodes = append(nodes, node{own: cost{evals: 1}})
				places = append(places, place{parent: -1})
				maps = append(maps, nil)
			}
			return leaf
		}
		return -1 // not a schema: the compiler refuses it
	}
	add(params, place{parent: -1})
	for i := 0; i < len(nodes); i++ {
		m := maps[i]
		if m == nil {
			continue
		}
		// Each edge goes to a subschema of a keyword of node i.
		edge := func(list *[]int, v any, kw, member string, named bool) {
			if j := add(v, place{parent: i, kw: kw, member: member, named: named}); j >= 0 {
				*list = append(*list, j)
			}
		}
		one := func(list *[]int, kw string, bools bool) {
			v, ok := m[kw]
			if _, isBool := v.(bool); ok && (bools || !isBool) {
				edge(list, v, kw, "", false)
			}
		}
		each := func(list *[]int, kw string) {
			if a, ok := m[kw].([]any); ok {
				for j, v := range a {
					edge(list, v, kw, itoa(j), true)
				}
			}
		}
		members := func(list *[]int, kw string, skipArrays bool) {
			if o, ok := m[kw].(map[string]any); ok {
				for k, v := range o {
					if _, isArray := v.([]any); skipArrays && isArray {
						continue
					}
					edge(list, v, kw, k, true)
				}
			}
		}
		var n node
		if ref, ok := m["$ref"].(string); ok {
			if frag, ok := strings.CutPrefix(ref, "#"); ok {
				if target, ok := resolvePointer(params, frag); ok {
					if j := add(target, place{parent: -1, ptr: frag}); j >= 0 {
						n.inSum = append(n.inSum, j)
					}
				}
			}
		}
		each(&n.inSum, "allOf")
		each(&n.inSum, "anyOf")
		each(&n.inSum, "oneOf")
		one(&n.inSum, "not", true)
		if cond, ok := m["if"]; ok {
			one(&n.inSum, "if", true)
			b, isBool := cond.(bool)
			if !isBool || b {
				one(&n.inSum, "then", true)
			}
			if !isBool || !b {
				one(&n.inSum, "else", true)
			}
		}
		members(&n.inSum, "dependentSchemas", false)
		members(&n.inSum, "dependencies", true) // arrays are dependentRequired
		members(&n.propMax, "properties", false)
		members(&n.objSum, "patternProperties", false)
		one(&n.objSum, "additionalProperties", false) // a boolean is no schema
		one(&n.objSum, "unevaluatedProperties", true)
		one(&n.objSum, "propertyNames", true)
		var prefix []int
		each(&prefix, "prefixItems")
		if len(prefix) > 0 {
			n.arrMax = append(n.arrMax, prefix)
		}
		if _, isArray := m["items"].([]any); !isArray { // an array is refused in 2020-12
			one(&n.arrSum, "items", true)
		}
		one(&n.arrSum, "contains", true)
		one(&n.arrSum, "unevaluatedItems", true)
		n.own = nodes[i].own
		nodes[i] = n
	}
	where := func(i int) string {
		var toks []string
		for ; i >= 0 && places[i].parent >= 0; i = places[i].parent {
			if p := places[i]; p.named {
				toks = append(toks, pointerToken(p.member))
			}
			toks = append(toks, pointerToken(places[i].kw))
		}
		var b strings.Builder
		if i >= 0 {
			b.WriteString(places[i].ptr)
		}
		for j := len(toks) - 1; j >= 0 && b.Len() <= 2*describeValueLen; j-- {
			b.WriteString("/")
			b.WriteString(toks[j])
		}
		return clip(b.String(), 2*describeValueLen)
	}
	return solveFanIn(nodes, depth, maxFanIn, where)
}

// draft2020 is the $schema of draft 2020-12 (http or https, with or
// without an empty fragment), the compiler's default.
func draft2020(v any) bool {
	s, ok := v.(string)
	if !ok {
		return false
	}
	s = strings.TrimSuffix(s, "#")
	return s == "https://json-schema.org/draft/2020-12/schema" || s == "http://json-schema.org/draft/2020-12/schema"
}

// preAnalyzable reports whether preAnalyze can read a document: draft
// 2020-12 (by default or by its root's $schema), and no "$id" nor nested
// "$schema" key anywhere (even where it is not a keyword: only ever
// fewer documents), so that every "#..." reference resolves against the
// document itself. It walks the values iteratively, each once, and
// counts the objects.
func preAnalyzable(params map[string]any) (int, bool) {
	if v, ok := params["$schema"]; ok && !draft2020(v) {
		return 0, false
	}
	if _, ok := params["$id"]; ok {
		return 0, false
	}
	objects := 1
	stack := make([]any, 0, len(params))
	for _, v := range params {
		stack = append(stack, v)
	}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch v := v.(type) {
		case map[string]any:
			objects++
			if _, ok := v["$id"]; ok {
				return 0, false
			}
			if _, ok := v["$schema"]; ok {
				return 0, false
			}
			for _, c := range v {
				stack = append(stack, c)
			}
		case []any:
			stack = append(stack, v...)
		}
	}
	return objects, true
}

// resolvePointer resolves a reference's fragment in the document as a
// JSON pointer, when it is plainly one: "" or "/..." of printable ASCII
// without '%' (no percent-decoding to agree on), array indexes in
// canonical form. Anything else (an anchor, an escape it doubts) is not
// resolved.
func resolvePointer(doc map[string]any, frag string) (any, bool) {
	if frag == "" {
		return doc, true
	}
	if frag[0] != '/' {
		return nil, false
	}
	for i := 0; i < len(frag); i++ {
		if c := frag[i]; c <= ' ' || c >= 0x7f || c == '%' || c == '#' || c == '\\' {
			return nil, false
		}
	}
	var cur any = doc
	for tok := range strings.SplitSeq(frag[1:], "/") {
		if strings.Contains(tok, "~") {
			for j := 0; j < len(tok); j++ {
				if tok[j] == '~' && (j+1 == len(tok) || (tok[j+1] != '0' && tok[j+1] != '1')) {
					return nil, false
				}
			}
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		}
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) || itoa(i) != tok {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

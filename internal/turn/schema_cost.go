package turn

import (
	"encoding/json"
	"math"
	"math/big"
	"slices"

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
// a number out of range is reported by its path. A number's bytes are its
// digits written out (7e300 has 301). Keys count as string
// places one level below their object (propertyNames evaluates them
// there), and their bytes also at the object's level (patternProperties
// matches them there).
func measure(v any, depth int) (shape, string, bool) {
	sh := shape{nodes: make([]uint64, depth+2), bytes: make([]uint64, depth+2), wide: make([]uint64, depth+2)}
	type item struct {
		v    any
		k    int
		path string
	}
	stack := []item{{v, 0, ""}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		k := min(it.k, depth+1)
		sh.nodes[k]++
		switch v := it.v.(type) {
		case map[string]any:
			sh.wide[k] += uint64(len(v))
			for key, child := range v {
				kb := uint64(len(key))
				sh.bytes[k] += kb
				if k+1 < len(sh.nodes) {
					sh.nodes[k+1]++
					sh.bytes[k+1] += kb
				}
				stack = append(stack, item{child, it.k + 1, it.path + "/" + pointerToken(key)})
			}
		case []any:
			sh.wide[k] += uint64(len(v))
			for i, child := range v {
				stack = append(stack, item{child, it.k + 1, it.path + "/" + itoa(i)})
			}
		case string:
			sh.bytes[k] += uint64(len(v))
		case json.Number:
			digits, ok := numberDigits(string(v))
			if !ok {
				return sh, it.path, false
			}
			sh.bytes[k] += uint64(digits)
		}
	}
	return sh, "", true
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

	order, cyclic := inPlaceOrder(nodes)
	if cyclic >= 0 {
		return nil, invalidSchema(pointerOf(all[cyclic]), "a reference cycle that never descends into the arguments (a schema applies itself in place), which no value can satisfy")
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
			where := "the arguments object"
			if k > 0 {
				where = "a value " + itoa(k) + " levels into the arguments"
			}
			return nil, tooLarge("", "too expensive to check: %s would be evaluated against %s schemas, at most %d (references or applicators that multiply)", where, fanIn(table[k].evals), maxFanIn)
		}
		prev, cur = cur, prev
	}
	return table, nil
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

package turn

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/turnstream/turnstream/pkg/wire"
)

// TestCompileCanonicalLoadsNothing compiles documents with foreign
// references past the pre-scan that refuses them: the compiler itself has
// no loader, so it refuses them too, without opening the FIFO (the test
// completing is the assertion) or reading the file.
func TestCompileCanonicalLoadsNothing(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	file := filepath.Join(dir, "s.json")
	if err := os.WriteFile(file, []byte(`{"description":"CANARY"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{
		`{"$ref":"file://` + fifo + `"}`,
		`{"$ref":"file://` + file + `"}`,
		`{"$id":"file://` + dir + `/","properties":{"a":{"$ref":"fifo"}}}`,
		`{"$id":"file://` + dir + `/","properties":{"a":{"$ref":"s.json"}}}`,
		`{"$ref":"http://127.0.0.1:9/s.json"}`,
		`{"$schema":"file://` + fifo + `"}`,
		`{"properties":{"a":{"$id":"x/","$schema":"file://` + fifo + `"}}}`,
	} {
		ts, problem := compileCanonical([]byte(doc), DefaultSchemaLimits)
		if ts != nil || problem == nil || problem.reason != SchemaReasonForeignRef {
			t.Errorf("compileCanonical(%s) = %v, %+v; want a foreign reference", doc, ts, problem)
			continue
		}
		if strings.Contains(problem.detail, "CANARY") {
			t.Errorf("compileCanonical(%s): %q holds the file's content", doc, problem.detail)
		}
	}
}

// allocated is the bytes f allocates (runtime.MemStats.TotalAlloc).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func mustCompile(t *testing.T, schema string) ToolSchemas {
	t.Helper()
	var p map[string]any
	if err := json.Unmarshal([]byte(schema), &p); err != nil {
		t.Fatal(err)
	}
	ts, err := CompileTools([]wire.Tool{{Name: "f", Parameters: p}})
	if err != nil {
		t.Fatalf("CompileTools(%.80s) = %v", schema, err)
	}
	return ts
}

// keyed is {"<key>":<value>}.
func keyed(key, value string) string { return `{"` + key + `":` + value + `}` }

// zeros is a JSON array of n zeros.
func zeros(n int) string { return "[" + strings.Repeat("0,", n-1) + "0]" }

// TestCheckMemoryIsLinear checks arguments whose every value sits below a
// long key: a check once built each value's path eagerly, E×K bytes for E
// values under a K-byte key (48 KiB of arguments allocated 292 MiB, 256 KiB
// some 8 GiB). Now it allocates in proportion to the arguments, mostly
// the decoded values.
func TestCheckMemoryIsLinear(t *testing.T) {
	ts := mustCompile(t, `{"type":"object"}`)
	long := func(n int) string { return strings.Repeat("k", n) }
	tests := []struct{ name, args string }{
		{"12 KiB: a 4 KiB key over 4 Ki values", keyed(long(4<<10), zeros(4<<10))},
		{"48 KiB: a 16 KiB key over 16 Ki values", keyed(long(16<<10), zeros(16<<10))},
		{"128 KiB: a 43 KiB key over 43 Ki values", keyed(long(128<<10/3), zeros(128<<10/3))},
		{"256 KiB: an 85 KiB key over 85 Ki values", keyed(long(256<<10/3), zeros(256<<10/3))},
		{"long keys nested 60 deep over 16 Ki values", strings.Repeat(`{"`+long(2<<10)+`":`, 60) + zeros(16<<10) + strings.Repeat("}", 60)},
		{"arrays nested 60 deep under a long key", keyed(long(64<<10), strings.Repeat("[", 60)+zeros(32<<10)+strings.Repeat("]", 60))},
		{"16 Ki keys of 8 bytes, each over an array", "{" + joinN(16<<10, func(i int) string { return fmt.Sprintf(`"%07d":[0]`, i) }) + "}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			got := allocated(func() { err = ts.Check("f", tt.args) })
			if err != nil {
				t.Fatalf("Check() = %v; want nil", err)
			}
			// Decoding takes some 36 bytes a byte of these arguments.
			if limit := 64*uint64(len(tt.args)) + 4<<20; got > limit {
				t.Errorf("Check(%d bytes of arguments) allocated %d KiB; want at most %d KiB", len(tt.args), got>>10, limit>>10)
			}
		})
	}
}

// TestCheckMeasureAllocatesLittle bounds measure alone: a frame per level and
// a slot per key of the open objects, whatever the keys' length.
func TestCheckMeasureAllocatesLittle(t *testing.T) {
	tests := []struct {
		name string
		args string
		keys int
	}{
		{"a long key over many values", keyed(strings.Repeat("k", 85<<10), zeros(85<<10)), 1},
		{"deep", strings.Repeat(`{"`+strings.Repeat("k", 1<<10)+`":[`, 30) + "0" + strings.Repeat("]}", 30), 30},
		{"wide", "{" + joinN(20_000, func(i int) string { return fmt.Sprintf(`"%d":[0,{"x":0}]`, i) }) + "}", 20_001},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := jsonschema.UnmarshalJSON(strings.NewReader(tt.args))
			if err != nil {
				t.Fatal(err)
			}
			var ok bool
			got := allocated(func() { _, _, ok = measure(doc, DefaultSchemaLimits.MaxArgumentDepth) })
			if !ok {
				t.Fatal("measure() = not ok")
			}
			if limit := uint64(64*tt.keys) + 16<<10; got > limit {
				t.Errorf("measure() allocated %d bytes; want at most %d", got, limit)
			}
		})
	}
}

// TestCheckMeasureShape checks the counts measure gives the cost analysis and
// the place of a number out of range.
func TestCheckMeasureShape(t *testing.T) {
	tests := []struct {
		name  string
		args  string
		nodes []uint64 // by depth, as far as given
		bytes []uint64
		wide  []uint64
		at    []string // of a number out of range
	}{
		{name: "flat", args: `{"ab":"xyz","c":[1,22]}`, nodes: []uint64{1, 4, 2}, bytes: []uint64{3, 6, 3}, wide: []uint64{2, 2, 0}},
		{name: "keys of nested objects", args: `{"a":{"bb":{"ccc":7e3}}}`, nodes: []uint64{1, 2, 2, 2, 0}, bytes: []uint64{1, 3, 5, 7, 0}, wide: []uint64{1, 1, 1, 0}},
		{name: "a number out of range", args: `{"a":[1,{"b~/c":[2,1e999]}],"d":0}`, at: []string{"a", "1", "b~/c", "1"}},
		{name: "at the top", args: `{"x":1e-999}`, at: []string{"x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := jsonschema.UnmarshalJSON(strings.NewReader(tt.args))
			if err != nil {
				t.Fatal(err)
			}
			sh, at, ok := measure(doc, 8)
			if tt.at != nil {
				if ok || !slices.Equal(at, tt.at) {
					t.Fatalf("measure() = %q, %v; want %q, false", at, ok, tt.at)
				}
				return
			}
			if !ok {
				t.Fatalf("measure() = %q, false; want ok", at)
			}
			for _, c := range []struct {
				name      string
				got, want []uint64
			}{{"nodes", sh.nodes, tt.nodes}, {"bytes", sh.bytes, tt.bytes}, {"wide", sh.wide, tt.wide}} {
				if !slices.Equal(c.got[:len(c.want)], c.want) {
					t.Errorf("%s = %v; want %v…", c.name, c.got, c.want)
				}
			}
		})
	}
}

// TestCheckDescribeBoundedWork fails arguments whose errors would each make
// the message builder redact or copy a long text: a path through a long
// key (8 KiB of "password=" took 7 s of redaction for 256 errors), many
// long extra property names, long schema locations and enum values. Only
// the problems described are redacted, of bounded names; the message is
// bounded.
func TestCheckDescribeBoundedWork(t *testing.T) {
	pw := func(n int) string { return strings.Repeat("password=", n/9) }
	extra := func(n, size int) string {
		return "{" + joinN(n, func(i int) string { return fmt.Sprintf(`"%d%s":0`, i, pw(size)) }) + "}"
	}
	longDef := strings.Repeat("d", 20<<10)
	tests := []struct {
		name, schema, args string
		shows              string // in the message
	}{
		{"a long key over 256 errors",
			`{"type":"object","additionalProperties":{"type":"array","items":{"type":"string"}}}`,
			keyed(pw(8<<10), zeros(256)), "and 253 more problem(s)"},
		{"a long key over 1,500 errors",
			`{"type":"object","additionalProperties":{"type":"array","items":{"type":"string"}}}`,
			keyed(pw(64<<10), zeros(1500)), "and at least 1000 more problem(s)"},
		{"long keys nested 40 deep",
			`{"$defs":{"n":{"type":"object","additionalProperties":{"anyOf":[{"$ref":"#/$defs/n"},{"type":"array","items":{"type":"string"}}]}}},"$ref":"#/$defs/n"}`,
			strings.Repeat(`{"`+pw(4<<10)+`":`, 40) + zeros(200) + strings.Repeat("}", 40), "/…"},
		{"200 extra properties of 4 KiB",
			`{"type":"object","additionalProperties":false}`,
			extra(200, 4<<10), "and 190 more"},
		{"objects of long extra names",
			`{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","additionalProperties":false}}}}`,
			keyed("a", "["+joinN(30, func(int) string { return extra(12, 2<<10) })+"]"), "and 27 more problem(s)"},
		{"a long schema location",
			`{"$defs":{"` + longDef + `":{"type":"array","items":{"type":"string"}}},"type":"object","properties":{"a":{"$ref":"#/$defs/` + longDef + `"}}}`,
			keyed("a", zeros(2000)), "(schema /$defs/ddd"},
		{"a long enum value",
			`{"type":"object","properties":{"a":{"type":"array","items":{"enum":["` + strings.Repeat("v", 30<<10) + `"]}}}}`,
			keyed("a", zeros(2000)), "one of the values"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := mustCompile(t, tt.schema)
			var err error
			got := allocated(func() { err = ts.Check("f", tt.args) })
			if err == nil {
				t.Fatal("Check() = nil; want an error")
			}
			msg := err.Error()
			if strings.Contains(msg, "too large to check") {
				t.Fatalf("Check() = %v; want it checked", err)
			}
			if !strings.Contains(msg, tt.shows) {
				t.Errorf("Check() = %q; want it to show %q", msg, tt.shows)
			}
			if len(msg) > describeMaxLen+100 {
				t.Errorf("Check() is %d bytes; want at most about %d", len(msg), describeMaxLen)
			}
			if strings.Contains(msg, strings.Repeat("password=", 3)) || strings.Contains(msg, strings.Repeat("d", 2*describeValueLen+1)) {
				t.Errorf("Check() = %q; it quotes a long name whole, or unredacted", msg)
			}
			// What validating takes, and some: not a redaction or a copy
			// of a long text per error.
			if limit := 64*uint64(len(tt.args)) + 16<<20; got > limit {
				t.Errorf("Check(%d bytes of arguments) allocated %d KiB; want at most %d KiB", len(tt.args), got>>10, limit>>10)
			}
		})
	}
}

// TestCheckRedactsNamesInAWindow: a name is redacted on a bounded window, then
// clipped; a credential starting in the part shown is redacted however
// long the name.
func TestCheckRedactsNamesInAWindow(t *testing.T) {
	const secret = "sk_live_51H8abcdEFGHijklMNOPqrst0123456789"
	tests := []struct{ name, in, want string }{
		{"short", "city", "city"},
		{"a credential", secret, "[REDACTED]"},
		{"a credential in a long name", "key " + secret + " " + strings.Repeat("x", 1<<20), "key [REDACTED] " + strings.Repeat("x", describeValueLen-len("key [REDACTED] ")) + "…"},
		{"a credential cut by the part shown", strings.Repeat("x", 40) + " " + secret + " " + strings.Repeat("x", 1<<20), strings.Repeat("x", 40) + " [REDACT…"},
		{"long", strings.Repeat("x", 1<<20), strings.Repeat("x", describeValueLen) + "…"},
		{"runes at the cut", strings.Repeat("é", 1<<10), strings.Repeat("é", describeValueLen/2) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := redactName(tt.in); got != tt.want {
				t.Errorf("redactName(%.40q…) = %q; want %q", tt.in, got, tt.want)
			}
		})
	}
	if got := instancePointer([]string{"a/b", "c~d", "0"}); got != "/a~1b/c~0d/0" {
		t.Errorf("instancePointer() = %q; want /a~1b/c~0d/0", got)
	}
	deep := make([]string, 60)
	for i := range deep {
		deep[i] = strings.Repeat("k", 1<<10)
	}
	if got := instancePointer(deep); len(got) > describePointerLen+2*describeValueLen || !strings.HasSuffix(got, "/…") {
		t.Errorf("instancePointer(60 tokens of 1 KiB) = %d bytes %q; want it cut after about %d", len(got), got, describePointerLen)
	}
}

// preAnalyzeCorpus are schemas that compile, for comparing preAnalyze
// with analyze. exact: preAnalyze follows every applicator of it.
var preAnalyzeCorpus = []struct {
	name, schema string
	exact        bool
}{
	{"empty", `{}`, true},
	{"properties", `{"type":"object","properties":{"a":{"type":"string"},"b":{"items":{"allOf":[{},{},true]}}}}`, true},
	{"every applicator", `{"allOf":[{}],"anyOf":[{},{}],"oneOf":[true],"not":{},"if":{},"then":{},"else":{},"dependentSchemas":{"a":{}},"dependencies":{"b":{},"c":["a"]},` +
		`"properties":{"p":{}},"patternProperties":{"^x":{}},"additionalProperties":{},"unevaluatedProperties":{},"propertyNames":{},` +
		`"prefixItems":[{},{"anyOf":[{},{}]}],"items":{},"contains":{},"unevaluatedItems":{}}`, true},
	{"boolean if", `{"if":true,"then":{"allOf":[{},{}]},"else":{"allOf":[{},{},{}]}}`, true},
	{"a boolean additionalProperties", `{"properties":{"a":{}},"additionalProperties":false}`, true},
	{"refs to $defs", `{"$defs":{"s":{"anyOf":[{"type":"string"},{"type":"integer"}]}},"properties":{"a":{"$ref":"#/$defs/s"},"b":{"allOf":[{"$ref":"#/$defs/s"},{"$ref":"#/$defs/s"}]}}}`, true},
	{"escaped pointers", `{"$defs":{"a/b":{"allOf":[{},{}]},"c~d":{"anyOf":[{},{},{}]}},"allOf":[{"$ref":"#/$defs/a~1b"},{"$ref":"#/$defs/c~0d"}]}`, true},
	{"a ref into an array", `{"anyOf":[{"allOf":[{},{}]},{"$ref":"#/anyOf/0"}]}`, true},
	{"recursion through children", `{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#"}}}}`, true},
	{"doubling 7 times", doublingSchema(7), true},
	{"recursion through properties and items", `{"$defs":{"n":{"properties":{"a":{"$ref":"#/$defs/n"},"b":{"$ref":"#/$defs/n"}},"items":{"$ref":"#/$defs/n"},"contains":{"anyOf":[{},{}]}}},"$ref":"#/$defs/n"}`, true},
	{"$dynamicRef", `{"$dynamicAnchor":"node","type":"object","properties":{"kids":{"type":"array","items":{"$dynamicRef":"#node"}}}}`, false},
	{"an anchor", `{"$defs":{"s":{"$anchor":"s","allOf":[{},{}]}},"properties":{"a":{"$ref":"#s"}}}`, false},
	{"a percent-encoded pointer", `{"$defs":{"a b":{"allOf":[{},{}]}},"properties":{"a":{"$ref":"#/$defs/a%20b"}}}`, false},
	{"$id: not read", `{"$id":"urn:x","$defs":{"s":{"allOf":[{},{}]}},"properties":{"a":{"$ref":"#/$defs/s"}}}`, false},
	{"draft-07: not read", `{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"s":{}},"properties":{"a":{"$ref":"#/definitions/s"}}}`, false},
	{"2020-12 named", `{"$schema":"https://json-schema.org/draft/2020-12/schema","anyOf":[{},{}]}`, true},
}

func doublingSchema(n int) string {
	defs := joinN(n, func(i int) string {
		return fmt.Sprintf(`"d%d":{"anyOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, i, i+1, i+1)
	})
	return fmt.Sprintf(`{"type":"object","properties":{"a":{"$ref":"#/$defs/d0"}},"$defs":{%s,"d%d":{"type":"string"}}}`, defs, n)
}

// TestCompilePreAnalysisIsALowerBound: what preAnalyze counts before compiling
// never exceeds what analyze counts after, so it never refuses a schema
// analyze accepts; where it follows every applicator, it counts the same.
func TestCompilePreAnalysisIsALowerBound(t *testing.T) {
	lim := DefaultSchemaLimits
	for _, tt := range preAnalyzeCorpus {
		t.Run(tt.name, func(t *testing.T) {
			var p map[string]any
			if err := json.Unmarshal([]byte(tt.schema), &p); err != nil {
				t.Fatal(err)
			}
			canon, _, problem := canonical(p, lim)
			if problem != nil {
				t.Fatal(problem.detail)
			}
			full, problem := compileCanonical(canon, lim)
			if problem != nil {
				t.Fatalf("compileCanonical() = %s", problem.detail)
			}
			pre, problem := preAnalyze(p, lim.MaxArgumentDepth, lim.MaxFanIn)
			if problem != nil {
				t.Fatalf("preAnalyze() = %s; want no refusal", problem.detail)
			}
			if pre == nil {
				if tt.exact {
					t.Fatal("preAnalyze() read nothing; want it read")
				}
				return
			}
			for k := range full.cost {
				if got, want := pre[k], full.cost[k].evals; got > want || (tt.exact && got != want) {
					t.Fatalf("at depth %d preAnalyze counts %d evaluations, analyze %d", k, got, want)
				}
			}
		})
	}
}

// TestCompilePreAnalysisWork bounds preAnalyze on the costliest documents within
// the limits: linear in their values, plus the per-depth table.
func TestCompilePreAnalysisWork(t *testing.T) {
	lim := DefaultSchemaLimits
	n := lim.MaxNodes - 10
	tests := []struct{ name, schema string }{
		{"properties", `{"type":"object","properties":{` + joinN(n/2, func(i int) string { return fmt.Sprintf(`"%d":{}`, i) }) + `}}`},
		{"refs", `{"$defs":{` + joinN(n/3, func(i int) string { return fmt.Sprintf(`"d%d":{"type":"string"}`, i) }) + `},"properties":{` +
			joinN(lim.MaxRefs-1, func(i int) string { return fmt.Sprintf(`"r%d":{"$ref":"#/$defs/d%d"}`, i, i*5) }) + `}}`},
		{"nested", strings.Repeat(`{"items":`, lim.MaxDepth-1) + `{}` + strings.Repeat(`}`, lim.MaxDepth-1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p map[string]any
			if err := json.Unmarshal([]byte(tt.schema), &p); err != nil {
				t.Fatal(err)
			}
			var problem *schemaProblem
			got := allocated(func() { _, problem = preAnalyze(p, lim.MaxArgumentDepth, lim.MaxFanIn) })
			if problem != nil {
				t.Fatal(problem.detail)
			}
			if limit := uint64(4 << 20); got > limit {
				t.Errorf("preAnalyze(%d bytes) allocated %d KiB; want at most %d KiB", len(tt.schema), got>>10, limit>>10)
			}
		})
	}
}

// joinN repeats f(i) n times, comma-separated.
func joinN(n int, f func(i int) string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = f(i)
	}
	return strings.Join(parts, ",")
}

package turn_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/turn"
	"github.com/turnstream/turnstream/pkg/wire"
)

// BenchmarkCompileWorstCase compiles, uncached, the most expensive schemas
// found within DefaultSchemaLimits: the compiler's work grows with the
// square of the subschemas, and with the patterns' programs.
func BenchmarkCompileWorstCase(b *testing.B) {
	lim := turn.DefaultSchemaLimits
	n := lim.MaxNodes - 10
	cases := []struct{ name, schema string }{
		{"properties", `{"type":"object","properties":{` + join(n, func(i int) string { return fmt.Sprintf(`"%d":{}`, i) }) + `}}`},
		{"prefixItems", `{"prefixItems":[` + join(n, func(int) string { return "{}" }) + `]}`},
		{"patterns", `{"properties":{` + join(lim.MaxPatterns, func(i int) string {
			return fmt.Sprintf(`"p%d":{"pattern":"[a-c]{0,490}[d-f]{0,490}x%d"}`, i, i)
		}) + `}}`},
		{"fan-in", `{"type":"array","items":{"allOf":[` + join(lim.MaxFanIn-2, func(int) string { return `{"type":"string"}` }) + `]}}`},
		{"refs", `{"x":{` + join(n/3, func(i int) string { return fmt.Sprintf(`"d%d":{"type":"string"}`, i) }) + `},"properties":{` +
			join(lim.MaxRefs-1, func(i int) string { return fmt.Sprintf(`"r%d":{"$ref":"#/x/d%d"}`, i, i*5) }) + `}}`},
	}
	for _, c := range cases {
		tools := []wire.Tool{{Name: "t", Parameters: params(b, c.schema)}}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := turn.CompileTools(tools); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCheckWorstCase checks, for schemas that make each kind of work
// expensive, the largest arguments DefaultSchemaLimits' MaxCheckCost lets
// through (most fail: failing evaluations cost the most).
func BenchmarkCheckWorstCase(b *testing.B) {
	items := func(item string) func(n int) string {
		return func(n int) string { return `{"a":[` + join(n, func(int) string { return item }) + `]}` }
	}
	cases := []struct {
		name, schema string
		args         func(n int) string
	}{
		{"items", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"}}}}`, items("1")},
		{"fan-in", `{"type":"object","properties":{"a":{"type":"array","items":{"allOf":[` + join(998, func(int) string { return `{"type":"string"}` }) + `]}}}}`, items("1")},
		{"pattern", `{"type":"object","properties":{"a":{"type":"string","pattern":"[a-c]{0,490}[d-f]{0,490}x"}}}`,
			func(n int) string { return `{"a":"` + strings.Repeat("ab", n/2) + `"}` }},
		{"enum numbers", `{"type":"object","properties":{"a":{"type":"array","items":{"enum":[` + join(4000, func(i int) string { return fmt.Sprint(1000003 * i) }) + `]}}}}`, items("3")},
		{"enum objects", `{"type":"object","properties":{"a":{"type":"array","items":{"enum":[` + join(600, func(int) string { return `{"k":[1,2,{"z":"q"}]}` }) + `]}}}}`, items(`{"k":[1,2,{"z":"r"}]}`)},
		{"regex format", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"type":"array","items":{"format":"regex"}}}}`, items(`"(a|b)*c{1,20}[x-z]"`)},
		{"big numbers", `{"type":"object","properties":{"a":{"type":"array","items":{"multipleOf":1e-300,"maximum":1e300}}}}`, items("7e399")},
		{"long key", `{"type":"object","additionalProperties":{"type":"array","items":{"type":"string"}}}`,
			func(n int) string {
				return `{"` + strings.Repeat("k", n) + `":[` + join(n, func(int) string { return "0" }) + `]}`
			}},
		{"deep", `{"$defs":{"n":{"type":"array","items":{"$ref":"#/$defs/n"}}},"type":"object","properties":{"a":{"$ref":"#/$defs/n"}}}`,
			func(n int) string {
				return `{"a":` + strings.Repeat("[", 60) + join(n, func(int) string { return "1" }) + strings.Repeat("]", 60) + `}`
			}},
	}
	for _, c := range cases {
		ts, err := turn.CompileTools([]wire.Tool{{Name: "t", Parameters: params(b, c.schema)}})
		if err != nil {
			b.Fatal(err)
		}
		// The largest n whose check is not refused as too costly.
		n, args := 1, c.args(1)
		for {
			next := c.args(n * 5 / 4)
			if err := ts.Check("t", next); err != nil && strings.Contains(err.Error(), "too large") || len(next) > 1<<20 {
				break
			}
			n, args = n*5/4+1, next
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportMetric(float64(len(args)), "args-bytes")
			b.ReportAllocs()
			for b.Loop() {
				if err := ts.Check("t", args); err != nil && strings.Contains(err.Error(), "too large") {
					b.Fatalf("Check() = %v; want it checked", err)
				}
			}
		})
	}
}

package turn_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/turnstream/turnstream/internal/hostile"
	"github.com/turnstream/turnstream/internal/turn"
	"github.com/turnstream/turnstream/pkg/wire"
)

// params decodes a JSON schema as a request decoder would.
func params(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("json.Unmarshal(%.60s…) = %v", s, err)
	}
	return m
}

func compileOne(t testing.TB, schema string) (turn.ToolSchemas, error) {
	t.Helper()
	return turn.CompileTools([]wire.Tool{{Name: "probe", Parameters: params(t, schema)}})
}

// join repeats f(i) n times, comma-separated.
func join(n int, f func(i int) string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = f(i)
	}
	return strings.Join(parts, ",")
}

func TestCompileToolsRefusesForeignReferences(t *testing.T) {
	dir := t.TempDir()
	canary := filepath.Join(dir, "schema.json")
	if err := os.WriteFile(canary, []byte(`{"type":"string","description":"CANARY-CONTENT"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, schema, kind string
	}{
		{"file URL", `{"type":"object","properties":{"a":{"$ref":"file://` + canary + `"}}}`, "a file URL"},
		{"file URL with pointer", `{"$ref":"file:///etc/passwd#/a"}`, "a file URL"},
		{"http URL", `{"$ref":"http://169.254.169.254/latest/meta-data"}`, "an http URL"},
		{"https URL", `{"properties":{"a":{"$ref":"https://example.com/s.json"}}}`, "an https URL"},
		{"relative reference", `{"$ref":"other.json#/$defs/a"}`, "a relative reference"},
		{"absolute path", `{"$ref":"` + canary + `"}`, "a relative reference"},
		{"URN", `{"$ref":"urn:example:schema"}`, "a URN"},
		{"other scheme", `{"$ref":"gopher://example.com/1"}`, "a gopher: URL"},
		{"$id to a file and a relative ref", `{"$id":"file://` + dir + `/","properties":{"a":{"$ref":"schema.json"}}}`, "a relative reference"},
		{"$id to a URL and a relative ref", `{"$id":"http://example.com/root.json","$ref":"leaf.json"}`, "a relative reference"},
		{"$dynamicRef to a URL", `{"properties":{"a":{"$dynamicRef":"http://example.com/s.json#meta"}}}`, "an http URL"},
		{"$recursiveRef to a file", `{"$schema":"https://json-schema.org/draft/2019-09/schema","items":{"$recursiveRef":"file:///etc/passwd"}}`, "a file URL"},
		{"$schema a file", `{"$schema":"file://` + canary + `","type":"object"}`, "a file URL"},
		{"$schema an unknown draft", `{"$schema":"https://json-schema.org/draft/2099-01/schema"}`, "an https URL"},
		{"$schema a URL", `{"$schema":"http://example.com/meta.json"}`, "an http URL"},
		{"$schema in a subschema", `{"properties":{"a":{"$id":"http://x/a","$schema":"http://example.com/meta"}}}`, "an http URL"},
		{"ref inside an enum value", `{"enum":[{"$ref":"http://example.com/"}]}`, "an http URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := compileOne(t, tt.schema)
			if !errors.Is(err, turn.ErrSchemaRef) {
				t.Fatalf("CompileTools() = %v; want ErrSchemaRef", err)
			}
			var se *turn.SchemaError
			if !errors.As(err, &se) || se.Reason != turn.SchemaReasonForeignRef || se.Tool != "probe" {
				t.Fatalf("CompileTools() = %#v; want a *SchemaError for tool probe, reason %s", err, turn.SchemaReasonForeignRef)
			}
			if msg := err.Error(); !strings.Contains(msg, "probe") || !strings.Contains(msg, tt.kind) {
				t.Errorf("error %q; want it to name the tool and %q", msg, tt.kind)
			}
			if msg := err.Error(); strings.Contains(msg, "CANARY") || strings.Contains(msg, "169.254") || strings.Contains(msg, dir) {
				t.Errorf("error %q quotes the reference or what it points to", msg)
			}
		})
	}
}

// TestCompileToolsNeverOpensAFIFO points references at a FIFO: opening one
// blocks until a writer comes, so the test completing is the assertion.
func TestCompileToolsNeverOpensAFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, schema := range []string{
		`{"$ref":"file://` + fifo + `"}`,
		`{"$ref":"` + fifo + `"}`,
		`{"$id":"file://` + dir + `/","properties":{"a":{"$ref":"fifo"}}}`,
		`{"$schema":"file://` + fifo + `"}`,
		`{"items":{"$dynamicRef":"file://` + fifo + `#node"}}`,
	} {
		if _, err := compileOne(t, schema); !errors.Is(err, turn.ErrSchemaRef) {
			t.Errorf("CompileTools(%s) = %v; want ErrSchemaRef", schema, err)
		}
	}
}

func TestCompileToolsInDocumentReferences(t *testing.T) {
	tests := []struct {
		name, schema string
		ok, bad      string // arguments that pass, and fail
	}{
		{"pointer to $defs", `{"type":"object","properties":{"a":{"$ref":"#/$defs/s"}},"$defs":{"s":{"type":"string"}}}`, `{"a":"x"}`, `{"a":1}`},
		{"anchor", `{"type":"object","properties":{"a":{"$ref":"#str"}},"$defs":{"s":{"$anchor":"str","type":"string"}}}`, `{"a":"x"}`, `{"a":1}`},
		{"$id elsewhere, fragment refs stay inside", `{"$id":"file:///etc/","type":"object","properties":{"a":{"$ref":"#/$defs/s"}},"$defs":{"s":{"type":"string"}}}`, `{"a":"x"}`, `{"a":1}`},
		{"embedded resource", `{"type":"object","properties":{"a":{"$id":"http://example.com/a","type":"object","properties":{"b":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"integer"}}}}}`, `{"a":{"b":1}}`, `{"a":{"b":"x"}}`},
		{"recursion through children", `{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#"}}}}`, `{"children":[{"children":[{"name":"x"}]}]}`, `{"children":[{"children":[{"name":1}]}]}`},
		{"$dynamicRef tree", `{"$dynamicAnchor":"node","type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$dynamicRef":"#node"}}}}`, `{"kids":[{"v":1}]}`, `{"kids":[{"v":"x"}]}`},
		{"draft-07", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"e":{"type":"string","format":"email"}},"definitions":{"x":{"$ref":"#/definitions/y"},"y":{}}}`, `{"e":"a@example.com"}`, `{"e":"not an email"}`},
		{"boolean subschemas", `{"type":"object","properties":{"a":true,"b":false}}`, `{"a":1}`, `{"b":1}`},
		{"empty", `{}`, `{"anything":[1,2,3]}`, `[1]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, err := compileOne(t, tt.schema)
			if err != nil {
				t.Fatalf("CompileTools() = %v; want it compiled", err)
			}
			if err := ts.Check("probe", tt.ok); err != nil {
				t.Errorf("Check(%s) = %v; want nil", tt.ok, err)
			}
			if err := ts.Check("probe", tt.bad); err == nil {
				t.Errorf("Check(%s) = nil; want an error", tt.bad)
			}
		})
	}
}

func TestCompileToolsMsgpackValues(t *testing.T) {
	// A msgpack request carries Go integer types; the same schema from
	// JSON carries float64. Both compile, to the same cached schema.
	fromMsgpack := map[string]any{"type": "object", "properties": map[string]any{
		"n": map[string]any{"type": "integer", "minimum": int8(1), "maximum": uint64(10), "multipleOf": float32(0.5)},
	}}
	fromJSON := params(t, `{"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":10,"multipleOf":0.5}}}`)
	cache, err := turn.NewSchemaCache(turn.SchemaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []map[string]any{fromMsgpack, fromJSON} {
		ts, err := cache.Compile([]wire.Tool{{Name: "n", Parameters: p}})
		if err != nil {
			t.Fatalf("Compile() = %v", err)
		}
		if err := ts.Check("n", `{"n":11}`); err == nil {
			t.Error("Check(n=11) = nil; want the maximum to hold")
		}
	}
	if got := cache.Compiles(); got != 1 {
		t.Errorf("Compiles() = %d; want 1 (the same schema)", got)
	}
}

// doubling is a schema whose references double at each of n levels: 2^n
// evaluations of one value.
func doubling(n int) string {
	defs := join(n, func(i int) string {
		return fmt.Sprintf(`"d%d":{"anyOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, i, i+1, i+1)
	})
	return fmt.Sprintf(`{"type":"object","properties":{"a":{"$ref":"#/$defs/d0"}},"$defs":{%s,"d%d":{"type":"string"}}}`, defs, n)
}

// deep nests n objects, as a decoder without a depth limit would.
func deep(n int) map[string]any {
	m := map[string]any{}
	for range n {
		m = map[string]any{"items": m}
	}
	return m
}

func TestCompileToolsLimits(t *testing.T) {
	lim := turn.DefaultSchemaLimits
	nested := func(levels int) string {
		return strings.Repeat(`{"items":`, levels-1) + `{}` + strings.Repeat(`}`, levels-1)
	}
	tests := []struct {
		name   string
		schema string
		params map[string]any // instead of schema
		want   error          // nil: compiles
	}{
		{name: "depth at the limit", schema: nested(lim.MaxDepth)},
		{name: "depth over the limit", schema: nested(lim.MaxDepth + 1), want: turn.ErrSchemaTooLarge},
		{name: "a million levels", params: deep(1_000_000), want: turn.ErrSchemaTooLarge},
		{name: "nodes over the limit", schema: `{"enum":[` + join(lim.MaxNodes, func(int) string { return "0" }) + `]}`, want: turn.ErrSchemaTooLarge},
		{name: "bytes over the limit", schema: `{"description":"` + strings.Repeat("x", lim.MaxBytes) + `"}`, want: turn.ErrSchemaTooLarge},
		{name: "references over the limit", schema: `{"$defs":{"s":{}},"properties":{` + join(lim.MaxRefs+1, func(i int) string { return fmt.Sprintf(`"p%d":{"$ref":"#/$defs/s"}`, i) }) + `}}`, want: turn.ErrSchemaTooLarge},
		{name: "patterns over the limit", schema: `{"properties":{` + join(lim.MaxPatterns+1, func(i int) string { return fmt.Sprintf(`"p%d":{"pattern":"^a%d$"}`, i, i) }) + `}}`, want: turn.ErrSchemaTooLarge},
		{name: "a pattern too long", schema: `{"pattern":"` + strings.Repeat("a", lim.MaxPatternBytes+1) + `"}`, want: turn.ErrSchemaTooLarge},
		{name: "a pattern that compiles big", schema: `{"pattern":"(a|b){0,1000}(c|d){0,1000}"}`, want: turn.ErrSchemaTooLarge},
		{name: "a patternProperties key that compiles big", schema: `{"patternProperties":{"(a|b){0,1000}":{}}}`, want: turn.ErrSchemaTooLarge},
		{name: "references that double 7 times", schema: doubling(7)},
		{name: "references that double 9 times", schema: doubling(9), want: turn.ErrSchemaTooLarge},
		{name: "references that double 40 times", schema: doubling(40), want: turn.ErrSchemaTooLarge},
		{name: "children that double", schema: `{"$defs":{"n":{"allOf":[{"properties":{"a":{"$ref":"#/$defs/n"}}},{"properties":{"a":{"$ref":"#/$defs/n"}}}]}},"$ref":"#/$defs/n"}`, want: turn.ErrSchemaTooLarge},
		{name: "a $ref cycle in place", schema: `{"$defs":{"a":{"anyOf":[{"type":"string"},{"$ref":"#/$defs/b"}]},"b":{"allOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`, want: turn.ErrSchemaInvalid},
		{name: "a schema that is its own $ref", schema: `{"$ref":"#"}`, want: turn.ErrSchemaInvalid},
		{name: "a $ref chain", schema: `{"$defs":{` + join(200, func(i int) string { return fmt.Sprintf(`"d%d":{"$ref":"#/$defs/d%d"}`, i, i+1) }) + `,"d200":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/d0"}}}`},
		{name: "a $ref to nothing", schema: `{"$ref":"#/$defs/missing"}`, want: turn.ErrSchemaInvalid},
		{name: "an anchor not declared", schema: `{"$ref":"#nowhere"}`, want: turn.ErrSchemaInvalid},
		{name: "not a schema", schema: `{"type":"objekt"}`, want: turn.ErrSchemaInvalid},
		{name: "an invalid pattern", schema: `{"pattern":"(("}`, want: turn.ErrSchemaInvalid},
		{name: "a number out of range", params: map[string]any{"multipleOf": json.Number("1e-9999999")}, want: turn.ErrSchemaInvalid},
		{name: "a number not finite", params: map[string]any{"maximum": math.Inf(1)}, want: turn.ErrSchemaInvalid},
		{name: "a value JSON does not have", params: map[string]any{"default": []byte("bin")}, want: turn.ErrSchemaInvalid},
		{name: "dynamic $recursiveRef", schema: `{"$schema":"https://json-schema.org/draft/2019-09/schema","$recursiveAnchor":true,"type":"object","additionalProperties":{"$recursiveRef":"#"}}`, want: turn.ErrSchemaInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.params
			if p == nil {
				p = params(t, tt.schema)
			}
			_, err := turn.CompileTools([]wire.Tool{{Name: "probe", Parameters: p}})
			if tt.want == nil {
				if err != nil {
					t.Fatalf("CompileTools() = %v; want it compiled", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("CompileTools() = %v; want %v", err, tt.want)
			}
			var se *turn.SchemaError
			if !errors.As(err, &se) || se.Tool != "probe" {
				t.Errorf("CompileTools() = %#v; want a *SchemaError naming the tool", err)
			}
		})
	}
}

func TestSchemaCacheCompilesOnce(t *testing.T) {
	cache, err := turn.NewSchemaCache(turn.SchemaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	schema := `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`
	tools := func() []wire.Tool {
		// The same parameters under two names, decoded afresh, keys in
		// another order: one schema.
		return []wire.Tool{
			{Name: "get_time", Parameters: params(t, schema)},
			{Name: "get_weather", Parameters: params(t, `{"required":["city"],"properties":{"city":{"type":"string"}},"type":"object"}`)},
			{Name: "noop"},
		}
	}
	for delivery := range 5 {
		ts, err := cache.Compile(tools())
		if err != nil {
			t.Fatalf("delivery %d: Compile() = %v", delivery, err)
		}
		if err := ts.Check("get_weather", `{}`); err == nil {
			t.Errorf("delivery %d: Check(get_weather, {}) = nil; want the required city", delivery)
		}
	}
	// Refused schemas are remembered too.
	for range 3 {
		if _, err := cache.Compile([]wire.Tool{{Name: "bad", Parameters: params(t, `{"type":"objekt"}`)}}); !errors.Is(err, turn.ErrSchemaInvalid) {
			t.Fatalf("Compile(bad) = %v; want ErrSchemaInvalid", err)
		}
	}
	// A bomb whose references multiply is refused before it compiles.
	for range 3 {
		if _, err := cache.Compile([]wire.Tool{{Name: "bomb", Parameters: params(t, doubling(30))}}); !errors.Is(err, turn.ErrSchemaTooLarge) {
			t.Fatalf("Compile(bomb) = %v; want ErrSchemaTooLarge", err)
		}
	}
	if got := cache.Compiles(); got != 2 {
		t.Errorf("Compiles() = %d; want 2 (one schema, one invalid schema, no bomb)", got)
	}

	// Concurrent deliveries of a new schema compile it once.
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if _, err := cache.Compile([]wire.Tool{{Name: "x", Parameters: params(t, `{"type":"object","properties":{"n":{"type":"integer"}}}`)}}); err != nil {
				t.Errorf("Compile() = %v", err)
			}
		})
	}
	wg.Wait()
	if got := cache.Compiles(); got != 3 {
		t.Errorf("Compiles() = %d after concurrent compiles; want 3", got)
	}
}

func TestSchemaCacheEvictsLeastRecentlyUsed(t *testing.T) {
	cache, err := turn.NewSchemaCache(turn.SchemaOptions{MaxEntries: 2})
	if err != nil {
		t.Fatal(err)
	}
	schema := func(i int) []wire.Tool {
		return []wire.Tool{{Name: "t", Parameters: params(t, fmt.Sprintf(`{"type":"object","maxProperties":%d}`, i))}}
	}
	for _, i := range []int{1, 2, 1, 3, 1, 2} { // 2 is evicted by 3, then compiled again
		if _, err := cache.Compile(schema(i)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := cache.Compiles(), uint64(4); got != want {
		t.Errorf("Compiles() = %d; want %d", got, want)
	}
	if got := cache.Len(); got != 2 {
		t.Errorf("Len() = %d; want 2", got)
	}
}

// TestSchemaCacheBoundsBytes: unique costly schemas cannot fill the
// cache's memory: past MaxBytes of canonical schemas the least recently
// used go, however few entries there are.
func TestSchemaCacheBoundsBytes(t *testing.T) {
	cache, err := turn.NewSchemaCache(turn.SchemaOptions{MaxBytes: 100 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		// About 45 KiB each: the canonical form of 4,980 properties.
		tools := []wire.Tool{{Name: "t", Parameters: hostile.HeavySchema(fmt.Sprint("salt", i))}}
		if _, err := cache.Compile(tools); err != nil {
			t.Fatal(err)
		}
		if n := cache.Len(); n > 2 {
			t.Fatalf("after %d heavy schemas Len() = %d; want at most 2 (100 KiB of 45 KiB schemas)", i+1, n)
		}
	}
	if got := cache.Compiles(); got != 10 {
		t.Errorf("Compiles() = %d; want 10", got)
	}
}

func TestSchemaOptionsValidate(t *testing.T) {
	if _, err := turn.NewSchemaCache(turn.SchemaOptions{MaxEntries: -1}); err == nil {
		t.Error("NewSchemaCache(MaxEntries -1) = nil error; want one")
	}
	if _, err := turn.NewSchemaCache(turn.SchemaOptions{MaxBytes: -1}); err == nil {
		t.Error("NewSchemaCache(MaxBytes -1) = nil error; want one")
	}
	if _, err := turn.NewSchemaCache(turn.SchemaOptions{Limits: turn.SchemaLimits{MaxDepth: -1}}); err == nil {
		t.Error("NewSchemaCache(MaxDepth -1) = nil error; want one")
	}
	if err := turn.DefaultSchemaLimits.Validate(); err != nil {
		t.Errorf("DefaultSchemaLimits.Validate() = %v", err)
	}
}

func TestCheckBoundsArguments(t *testing.T) {
	ts, err := compileOne(t, `{"type":"object","properties":{"a":{"type":"array","items":{"allOf":[`+join(500, func(int) string { return `{"type":"integer"}` })+`]}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, args, want string
	}{
		{"not JSON", `{"a":`, "not valid JSON"},
		{"not an object", `[1]`, "not a JSON object"},
		{"too deep", `{"b":` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + `}`, "deeper than"},
		{"too large", `{"b":"` + strings.Repeat("x", turn.DefaultSchemaLimits.MaxArgumentBytes) + `"}`, "more than"},
		{"a number out of range", `{"a":[1e99999]}`, "out of range at /a/0"},
		{"too costly to check", `{"a":[` + join(1000, func(int) string { return "1" }) + `]}`, "too large to check"},
		{"a number out of range under a long key", `{"` + strings.Repeat("k", 100_000) + `":[1e99999]}`, "out of range at /" + strings.Repeat("k", 48) + "…/0 "},
		{"a number out of range under a credential", `{"sk_live_51H8abcdEFGHijklMNOPqrst0123456789":{"a~/b":[0,1e99999]}}`, "out of range at /[REDACTED]/a~0~1b/1 "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ts.Check("probe", tt.args)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Check() = %v; want an error with %q", err, tt.want)
			}
		})
	}
	if err := ts.Check("probe", `{"a":[1,2,3]}`); err != nil {
		t.Errorf("Check(three items) = %v; want nil", err)
	}
}

// TestCheckNeverQuotesValues fails arguments holding a credential under
// every kind of rule: the error names the place and the rule, never the
// value.
func TestCheckNeverQuotesValues(t *testing.T) {
	const secret = "sk_live_51H8abcdEFGHijklMNOPqrst0123456789"
	tests := []struct {
		name, schema, args string
		want               []string // in the error
	}{
		{"pattern", `{"type":"object","properties":{"key":{"type":"string","pattern":"^[a-z]+$"}}}`, `{"key":"` + secret + `"}`, []string{"/key", "pattern", "^[a-z]+$", "/properties/key/pattern"}},
		{"enum", `{"type":"object","properties":{"mode":{"enum":["fast","slow"]}}}`, `{"mode":"` + secret + `"}`, []string{"/mode", "one of", `"fast"`, "/properties/mode/enum"}},
		{"const", `{"type":"object","properties":{"v":{"const":"x"}}}`, `{"v":"` + secret + `"}`, []string{"/v", "constant"}},
		{"type", `{"type":"object","properties":{"n":{"type":"integer"}}}`, `{"n":"` + secret + `"}`, []string{"/n", "integer", "a string", "/properties/n/type"}},
		{"maxLength", `{"type":"object","properties":{"s":{"type":"string","maxLength":8}}}`, `{"s":"` + secret + `"}`, []string{"/s", "at most 8 characters"}},
		{"format", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"e":{"format":"email"}}}`, `{"e":"` + secret + `"}`, []string{"/e", "email"}},
		{"not", `{"type":"object","properties":{"s":{"not":{"type":"string"}}}}`, `{"s":"` + secret + `"}`, []string{"/s", "not"}},
		{"oneOf", `{"type":"object","properties":{"s":{"oneOf":[{"type":"integer"},{"type":"boolean"}]}}}`, `{"s":"` + secret + `"}`, []string{"/s", "integer", "boolean"}},
		{"numbers", `{"type":"object","properties":{"pin":{"type":"integer","maximum":99}}}`, `{"pin":4111111111111111}`, []string{"/pin", "at most 99"}},
		{"nested", `{"type":"object","properties":{"env":{"type":"array","items":{"type":"object","properties":{"value":{"type":"string","maxLength":3}}}}}}`, `{"env":[{"value":"ok"},{"value":"` + secret + `"}]}`, []string{"/env/1/value", "at most 3"}},
		{"required", `{"type":"object","required":["city"]}`, `{"token":"` + secret + `"}`, []string{"the arguments object", `"city"`}},
		{"additionalProperties", `{"type":"object","properties":{"a":{}},"additionalProperties":false}`, `{"` + secret + `":1}`, []string{"does not allow", "[REDACTED]", "/additionalProperties"}},
		{"a credential in the path", `{"type":"object","additionalProperties":{"type":"integer"}}`, `{"` + secret + `":"x"}`, []string{"/[REDACTED]", "integer"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, err := compileOne(t, tt.schema)
			if err != nil {
				t.Fatal(err)
			}
			err = ts.Check("probe", tt.args)
			if err == nil {
				t.Fatalf("Check(%s) = nil; want an error", tt.args)
			}
			msg := err.Error()
			for _, value := range []string{secret, "sk_live", "4111111111111111"} {
				if strings.Contains(msg, value) {
					t.Errorf("Check() = %q; it quotes the value", msg)
				}
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("Check() = %q; want it to name %q", msg, w)
				}
			}
		})
	}
}

// TestCompileToolsTotals: a request's tools together are bounded too
// (MaxTotalBytes, MaxTotalNodes), before any of them compiles; the
// refusal names the first tool over the total and no place in it.
func TestCompileToolsTotals(t *testing.T) {
	lim := turn.DefaultSchemaLimits
	// About 45 KiB and 4,984 values each.
	heavy := func(n int) []wire.Tool {
		tools := make([]wire.Tool, n)
		for i := range tools {
			tools[i] = wire.Tool{Name: fmt.Sprint("heavy", i), Parameters: hostile.HeavySchema(fmt.Sprint("salt", i))}
		}
		return tools
	}
	// About 4 KiB and 2,002 values each.
	enum := func(names ...string) []wire.Tool {
		var tools []wire.Tool
		for i, name := range names {
			tools = append(tools, wire.Tool{Name: name, Parameters: params(t, `{"description":"`+fmt.Sprint(i)+`","enum":[`+join(2000, func(int) string { return "0" })+`]}`)})
		}
		return tools
	}
	tests := []struct {
		name   string
		limits turn.SchemaLimits
		tools  []wire.Tool
		tool   string // the tool refused, "" if none
		detail string
	}{
		{name: "two heavy schemas", tools: heavy(2)},
		{name: "three heavy schemas: over the bytes", tools: heavy(3), tool: "heavy2", detail: "more than 131072 bytes"},
		{name: "twenty heavy schemas", tools: heavy(20), tool: "heavy2", detail: "more than 131072 bytes"},
		{name: "four enums", tools: enum("a", "b", "c", "d")},
		{name: "six enums: over the values", tools: enum("a", "b", "c", "d", "e", "f"), tool: "e", detail: "more than 10000 values"},
		{name: "lower limits", limits: turn.SchemaLimits{MaxTotalBytes: 6 << 10}, tools: enum("a", "b", "c"), tool: "b", detail: "more than 6144 bytes"},
		{name: "tools without parameters count nothing", tools: append(heavy(2), wire.Tool{Name: "none"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cache, err := turn.NewSchemaCache(turn.SchemaOptions{Limits: tt.limits, MaxBytes: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			_, err = cache.Compile(tt.tools)
			if tt.tool == "" {
				if err != nil {
					t.Fatalf("Compile() = %v; want it compiled", err)
				}
				return
			}
			var se *turn.SchemaError
			if !errors.Is(err, turn.ErrSchemaTooLarge) || !errors.As(err, &se) {
				t.Fatalf("Compile() = %v; want a *SchemaError of ErrSchemaTooLarge", err)
			}
			if se.Reason != turn.SchemaReasonTooLarge || se.Tool != tt.tool || se.Path != "" || !strings.Contains(se.Detail, tt.detail) {
				t.Errorf("Compile() = %#v; want tool %s, no path, a detail with %q", se, tt.tool, tt.detail)
			}
			if n := cache.Compiles(); n != 0 {
				t.Errorf("Compiles() = %d; want none before the refusal", n)
			}
		})
	}
	if lim.MaxTotalBytes != 128<<10 || lim.MaxTotalNodes != 10_000 {
		t.Errorf("DefaultSchemaLimits totals = %d bytes, %d values; want 131072, 10000 (documented)", lim.MaxTotalBytes, lim.MaxTotalNodes)
	}
	for _, l := range []turn.SchemaLimits{{MaxTotalBytes: -1}, {MaxTotalNodes: -1}} {
		if err := l.Validate(); err == nil {
			t.Errorf("%+v.Validate() = nil; want an error", l)
		}
	}
}

// TestCompileToolsRefusesBeforeCompiling: a schema whose references
// multiply or cycle in place is refused before anything compiles, also
// after other tools; one the pre-analysis cannot read (an "$id", another
// draft) is refused by the analysis after compiling, as before.
func TestCompileToolsRefusesBeforeCompiling(t *testing.T) {
	fine := wire.Tool{Name: "fine", Parameters: hostile.HeavySchema("fine")}
	tests := []struct {
		name     string
		schema   string
		want     error
		compiles uint64
	}{
		{"references that double 9 times", doubling(9), turn.ErrSchemaTooLarge, 0},
		{"references that double 40 times", doubling(40), turn.ErrSchemaTooLarge, 0},
		{"children that double", `{"$defs":{"n":{"allOf":[{"properties":{"a":{"$ref":"#/$defs/n"}}},{"properties":{"a":{"$ref":"#/$defs/n"}}}]}},"$ref":"#/$defs/n"}`, turn.ErrSchemaTooLarge, 0},
		{"an allOf of 1,001", `{"items":{"allOf":[` + join(1001, func(int) string { return "{}" }) + `]}}`, turn.ErrSchemaTooLarge, 0},
		{"a $ref cycle in place", `{"$defs":{"a":{"anyOf":[{"type":"string"},{"$ref":"#/$defs/b"}]},"b":{"allOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`, turn.ErrSchemaInvalid, 0},
		{"doubling with an $id: after compiling", `{"$id":"urn:bomb",` + doubling(9)[1:], turn.ErrSchemaTooLarge, 2},
		{"doubling in draft 2019-09: after compiling", `{"$schema":"https://json-schema.org/draft/2019-09/schema",` + doubling(9)[1:], turn.ErrSchemaTooLarge, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cache, err := turn.NewSchemaCache(turn.SchemaOptions{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = cache.Compile([]wire.Tool{fine, {Name: "bomb", Parameters: params(t, tt.schema)}})
			var se *turn.SchemaError
			if !errors.Is(err, tt.want) || !errors.As(err, &se) || se.Tool != "bomb" {
				t.Fatalf("Compile() = %v; want %v for tool bomb", err, tt.want)
			}
			if n := cache.Compiles(); n != tt.compiles {
				t.Errorf("Compiles() = %d; want %d", n, tt.compiles)
			}
		})
	}
}

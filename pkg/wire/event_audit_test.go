package wire_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/wire"
)

// identifierFields are the only payload fields that may hold a string that
// is not an Enum value, each with the reason it may: identifiers the
// events carried before they were typed, bounded by a pattern, never
// content, arguments, results, reasoning, echo, bodies, credentials, paths
// or hashes. Keys are "<declaring type>.<field>".
var identifierFields = map[string]string{
	"LLMAttempt.Provider":           "a configured provider name, from the worker's config; token-checked",
	"LLMAttempt.Model":              "a configured model name, from the worker's config; token-checked",
	"LLMAttempt.RequestID":          "the provider's id of the failed request, to quote to its support; token-checked",
	"LLMFallback.ToProvider":        "the next target's configured provider name",
	"LLMFallback.ToModel":           "the next target's configured model name",
	"HistorySelected.Provider":      "the serving target's configured provider name",
	"HistorySelected.Model":         "the serving target's configured model name",
	"ContinuationDegraded.Provider": "the target's configured provider name",
	"ContinuationDegraded.Model":    "the target's configured model name",
	"ToolCallRef.Tool":              "the tool's name, a token the request declared",
	"ToolCallRef.CallID":            "the normalized call id, generated or checked by the turn loop, that joins the events of one call",
	"ToolResultRejected.Tool":       "the pending call's tool name",
	"ToolResultRejected.CallID":     "the pending call's normalized id",
	"TurnRejected.Field":            "the path of the invalid field in the request, never its value: ASCII, at most 128 bytes (ValidationError.Field)",
}

var (
	snakeName  = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	enumValue  = regexp.MustCompile(`^[A-Za-z0-9_./-]{1,64}$`)
	durationTy = reflect.TypeFor[time.Duration]()
	enumTy     = reflect.TypeFor[wire.Enum]()
)

// TestPayloadAudit enforces the audit rule on every payload type: each
// field is a count (an integer), a boolean, a duration in milliseconds (an
// integer named *_ms), an Enum value or a slice of those; a free string
// only where identifierFields says why, and bounded by a schema pattern or
// length.
func TestPayloadAudit(t *testing.T) {
	used := map[string]bool{}
	for _, p := range wire.EventPayloads() {
		typ := reflect.TypeOf(p)
		t.Run(typ.Name(), func(t *testing.T) {
			if typ.Kind() != reflect.Struct {
				t.Fatalf("%s is a %s; want a struct", typ, typ.Kind())
			}
			names := map[string]bool{}
			auditFields(t, typ, names, used)
		})
	}
	for k := range identifierFields {
		if !used[k] {
			t.Errorf("identifierFields lists %s, which no payload type has", k)
		}
	}
}

func auditFields(t *testing.T, typ reflect.Type, names, used map[string]bool) {
	t.Helper()
	for f := range typ.Fields() {
		key := typ.Name() + "." + f.Name
		if f.Anonymous {
			if f.Type.Kind() != reflect.Struct {
				t.Errorf("%s: embedded %s; only structs of payload fields may be embedded", key, f.Type)
				continue
			}
			auditFields(t, f.Type, names, used)
			continue
		}
		if !f.IsExported() {
			t.Errorf("%s is unexported; every payload field is encoded", key)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case !snakeName.MatchString(name):
			t.Errorf("%s: json name %q; want snake_case", key, name)
		case names[name]:
			t.Errorf("%s: json name %q used twice", key, name)
		}
		names[name] = true
		ft := f.Type
		if ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		switch {
		case ft == durationTy:
			t.Errorf("%s is a time.Duration; durations are integer milliseconds named *_ms", key)
		case strings.HasSuffix(name, "_ms") && !isInteger(ft):
			t.Errorf("%s (%s) is a %s; a *_ms field holds integer milliseconds", key, name, ft)
		case isInteger(ft), ft.Kind() == reflect.Bool:
		case ft.Kind() == reflect.String && ft.Implements(enumTy):
			auditEnum(t, key, reflect.Zero(ft).Interface().(wire.Enum))
		case ft.Kind() == reflect.String && ft.PkgPath() == "":
			if identifierFields[key] == "" {
				t.Errorf("%s is a free string; only the identifiers of identifierFields may be (make it an Enum, or list it with the reason it may be there)", key)
			}
			used[key] = true
			if tag := f.Tag.Get("jsonschema"); !strings.Contains(tag, "pattern=") && !strings.Contains(tag, "maxLength=") {
				t.Errorf("%s is a string without a schema pattern or maxLength", key)
			}
		default:
			t.Errorf("%s is a %s; a payload field is an integer, a boolean, an Enum or a slice of those", key, f.Type)
		}
	}
}

func isInteger(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

func auditEnum(t *testing.T, key string, e wire.Enum) {
	t.Helper()
	values := e.Values()
	if len(values) == 0 {
		t.Errorf("%s: %T lists no values", key, e)
	}
	seen := map[string]bool{}
	for _, v := range values {
		if !enumValue.MatchString(v) || seen[v] {
			t.Errorf("%s: %T value %q is empty, repeated or not a short token", key, e, v)
		}
		seen[v] = true
	}
}

// TestEveryEventTypeHasAPayloadType checks the Event constants against
// the payload types, one for one.
func TestEveryEventTypeHasAPayloadType(t *testing.T) {
	constants := []string{
		wire.EventTurnAccepted, wire.EventTurnRejected, wire.EventTurnCompleted, wire.EventTurnFailed, wire.EventTurnDuplicate,
		wire.EventLLMRequest, wire.EventLLMRetry, wire.EventLLMRetryStarted, wire.EventLLMFallback, wire.EventLLMFinish,
		wire.EventToolDispatched, wire.EventToolResult, wire.EventToolResultRejected, wire.EventToolRepaired,
		wire.EventBudgetExceeded, wire.EventTurnContinued, wire.EventStepRetried,
		wire.EventHistorySelected, wire.EventHistoryRepaired, wire.EventHistorySkipped, wire.EventHistorySerialized,
		wire.EventContinuationDegraded,
	}
	var types []string
	for _, p := range wire.EventPayloads() {
		types = append(types, p.EventType())
	}
	if got, want := slices.Sorted(slices.Values(types)), slices.Sorted(slices.Values(constants)); !slices.Equal(got, want) {
		t.Errorf("payload types' event types = %v; want the Event constants %v", got, want)
	}
}

// legacyNames are the event names given before the naming rule; they are
// public and stay as they are.
var legacyNames = map[string]bool{
	wire.EventLLMRequest: true, wire.EventLLMRetry: true, wire.EventLLMRetryStarted: true,
	wire.EventLLMFallback: true, wire.EventLLMFinish: true,
	wire.EventHistorySelected: true, wire.EventHistoryRepaired: true, wire.EventHistorySkipped: true,
	wire.EventHistorySerialized: true, wire.EventContinuationDegraded: true,
}

var eventName = regexp.MustCompile(`^[a-z]+\.[a-z]+(-[a-z]+)*$`)

// TestEventNameStyle holds every event name but the legacy ones to the
// rule of the Event constants: "<subject>.<event>", words joined by "-".
func TestEventNameStyle(t *testing.T) {
	for _, p := range wire.EventPayloads() {
		if name := p.EventType(); !legacyNames[name] && !eventName.MatchString(name) {
			t.Errorf("event name %q does not match %s", name, eventName)
		}
	}
}

// TestProducersBuildTypedPayloads fails for any payload map built by hand
// outside tests: a `Payload: map...{...}` field, an assignment of a map
// literal to a Payload, or a key set in one (ev.Payload["k"] = v). Events
// are built with wire.NewEvent from a payload type.
func TestProducersBuildTypedPayloads(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "testdata", "vendor":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.KeyValueExpr:
				if isIdent(n.Key, "Payload") && isMapLiteral(n.Value) {
					t.Errorf("%s: a payload map built by hand; use wire.NewEvent with a payload type", fset.Position(n.Pos()))
				}
			case *ast.AssignStmt:
				for i, lhs := range n.Lhs {
					if ix, ok := lhs.(*ast.IndexExpr); ok && isPayloadField(ix.X) {
						t.Errorf("%s: a key set in a payload map; use wire.NewEvent with a payload type", fset.Position(n.Pos()))
					}
					if isPayloadField(lhs) && i < len(n.Rhs) && isMapLiteral(n.Rhs[i]) {
						t.Errorf("%s: a payload map built by hand; use wire.NewEvent with a payload type", fset.Position(n.Pos()))
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

func isPayloadField(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Payload"
}

func isMapLiteral(e ast.Expr) bool {
	cl, ok := e.(*ast.CompositeLit)
	if !ok {
		return false
	}
	_, isMap := cl.Type.(*ast.MapType)
	return isMap || cl.Type == nil
}

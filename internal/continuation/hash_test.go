package continuation_test

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/turnstream/turnstream/internal/continuation"
	"github.com/turnstream/turnstream/pkg/wire"
)

func TestSystemPromptHash(t *testing.T) {
	tests := []struct {
		name, a, b string
		wantEqual  bool
	}{
		{"same prompt", systemPrompt, systemPrompt, true},
		{"one character", systemPrompt, systemPrompt + ".", false},
		{"whitespace matters", systemPrompt, systemPrompt + " ", false},
		{"empty and non-empty", "", systemPrompt, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := continuation.SystemPromptHash(tt.a), continuation.SystemPromptHash(tt.b)
			if (a == b) != tt.wantEqual {
				t.Errorf("SystemPromptHash(%q) == SystemPromptHash(%q) is %v; want %v", tt.a, tt.b, a == b, tt.wantEqual)
			}
		})
	}
}

// TestHashGolden pins the digests: a change to the canonical encoding
// would silently degrade every stored cursor, so it must be deliberate.
func TestHashGolden(t *testing.T) {
	tests := []struct {
		name, got, want string
	}{
		{"system prompt", continuation.SystemPromptHash(systemPrompt), "103b18f327b5efd90dfe91bbe97f37f43189d0d023548886f60051310def0638"},
		{"empty system prompt", continuation.SystemPromptHash(""), "4d709867fbf2d2c4a6b2b690fb07f1c078eaa66eecbdb628b9632972494200f7"},
		{"toolset", continuation.ToolsetHash(tools), "a96db2f80544b8152e966153ca4185ff171e333254263a81f155d4f818998f47"},
		{"empty toolset", continuation.ToolsetHash(nil), "23ff900c1c4d8de4e95eb549826b6a12df7e16fd7ab1441bb81d046568eea668"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("hash = %s; want %s", tt.got, tt.want)
			}
		})
	}
}

// schema builds a JSON Schema object whose maps are filled in the given
// key order; Go randomizes map iteration besides.
func schema(order []string) map[string]any {
	props := map[string]any{}
	for _, k := range order {
		props[k] = map[string]any{"type": "string", "description": "field " + k, "enum": []any{k + "1", k + "2"}}
	}
	return map[string]any{"type": "object", "properties": props, "required": []any{"a", "b"}, "additionalProperties": false}
}

func TestToolsetHashStable(t *testing.T) {
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"}
	want := continuation.ToolsetHash([]wire.Tool{{Name: "t", Parameters: schema(keys)}})

	t.Run("map order", func(t *testing.T) {
		for i := range 50 {
			order := slices.Clone(keys)
			// A different insertion order each round.
			for j := range order {
				k := (j*7 + i) % len(order)
				order[j], order[k] = order[k], order[j]
			}
			if got := continuation.ToolsetHash([]wire.Tool{{Name: "t", Parameters: schema(order)}}); got != want {
				t.Fatalf("ToolsetHash(keys in order %v) = %s; want %s", order, got, want)
			}
		}
	})
	t.Run("decoded from JSON with other key order", func(t *testing.T) {
		var params map[string]any
		src := `{"required":["a","b"],"additionalProperties":false,"properties":{` + reversedProps(keys) + `},"type":"object"}`
		if err := json.Unmarshal([]byte(src), &params); err != nil {
			t.Fatal(err)
		}
		if got := continuation.ToolsetHash([]wire.Tool{{Name: "t", Parameters: params}}); got != want {
			t.Errorf("ToolsetHash(decoded schema) = %s; want %s", got, want)
		}
	})
	t.Run("tool order", func(t *testing.T) {
		a := []wire.Tool{{Name: "alpha"}, {Name: "beta", Description: "b"}, {Name: "gamma", Parameters: schema(keys)}}
		b := []wire.Tool{a[2], a[0], a[1]}
		c := []wire.Tool{a[1], a[2], a[0]}
		ha, hb, hc := continuation.ToolsetHash(a), continuation.ToolsetHash(b), continuation.ToolsetHash(c)
		if ha != hb || ha != hc {
			t.Errorf("ToolsetHash over three orders = %s, %s, %s; want one digest", ha, hb, hc)
		}
	})
	t.Run("duplicate names in either order", func(t *testing.T) {
		x, y := wire.Tool{Name: "t", Description: "x"}, wire.Tool{Name: "t", Description: "y"}
		if a, b := continuation.ToolsetHash([]wire.Tool{x, y}), continuation.ToolsetHash([]wire.Tool{y, x}); a != b {
			t.Errorf("ToolsetHash(x, y) = %s, ToolsetHash(y, x) = %s; want equal", a, b)
		}
	})
	t.Run("unencodable schema is still deterministic", func(t *testing.T) {
		bad := []wire.Tool{{Name: "t", Parameters: map[string]any{"maximum": math.NaN(), "b": 1, "a": 2}}}
		if a, b := continuation.ToolsetHash(bad), continuation.ToolsetHash(bad); a != b {
			t.Errorf("ToolsetHash(NaN schema) = %s then %s; want equal", a, b)
		}
	})
}

// reversedProps is the JSON of schema's properties, keys in reverse order.
func reversedProps(keys []string) string {
	s := ""
	for i := range keys {
		k := keys[len(keys)-1-i]
		if s != "" {
			s += ","
		}
		s += fmt.Sprintf(`%q:{"enum":[%q,%q],"description":"field %s","type":"string"}`, k, k+"1", k+"2", k)
	}
	return s
}

func TestToolsetHashChanges(t *testing.T) {
	search := func(desc, qType string) wire.Tool {
		return wire.Tool{Name: "search", Description: desc, Parameters: map[string]any{
			"type": "object", "properties": map[string]any{"q": map[string]any{"type": qType}},
		}}
	}
	base := []wire.Tool{search("Search.", "string")}
	renamed := search("Search.", "string")
	renamed.Name = "find"
	tests := []struct {
		name      string
		a, b      []wire.Tool
		wantEqual bool
	}{
		{"identical copy", base, []wire.Tool{search("Search.", "string")}, true},
		{"renamed", base, []wire.Tool{renamed}, false},
		{"description changed", base, []wire.Tool{search("Search!", "string")}, false},
		{"schema changed", base, []wire.Tool{search("Search.", "integer")}, false},
		{"tool added", base, []wire.Tool{search("Search.", "string"), {Name: "clock"}}, false},
		{"tools removed", base, nil, false},
		{"nil and empty toolsets", nil, []wire.Tool{}, true},
		{"nil and empty parameters", []wire.Tool{{Name: "t"}}, []wire.Tool{{Name: "t", Parameters: map[string]any{}}}, true},
		{
			"int and float64 of one number",
			[]wire.Tool{{Name: "n", Parameters: map[string]any{"maxLength": 64}}},
			[]wire.Tool{{Name: "n", Parameters: map[string]any{"maxLength": float64(64)}}},
			true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := continuation.ToolsetHash(tt.a), continuation.ToolsetHash(tt.b)
			if (a == b) != tt.wantEqual {
				t.Errorf("ToolsetHash(%v) == ToolsetHash(%v) is %v; want %v", tt.a, tt.b, a == b, tt.wantEqual)
			}
		})
	}
}

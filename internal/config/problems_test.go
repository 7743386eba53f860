package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestLoadSchemaProblems: a config that breaks the schema is reported with
// the user's file, each offending key, its line and the schema rule, never
// with the schema's own location (it used to name
// file:///<cwd>/config.schema.json, a file that does not exist).
func TestLoadSchemaProblems(t *testing.T) {
	path := filepath.Join(t.TempDir(), "worker.yaml")
	doc := `providers:
  - name: openai
    api: openai_chat
    base_url: https://api.openai.com/v1
models:
  - {provider: openai, name: gpt-4o-mini, context_tokens: lots}
routes:
  - name: default
    targets: [{provider: openai, model: gpt-4o-mini}]
worker:
  concurency: 4
  drain_timeout: soon
`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	var se *SchemaError
	if !errors.As(err, &se) {
		t.Fatalf("Load() = %v; want a *SchemaError", err)
	}
	want := []Problem{
		{Key: "providers[0].api", Line: 3, Rule: "enum"},
		{Key: "models[0].context_tokens", Line: 6, Rule: "type"},
		{Key: "worker.concurency", Line: 11, Rule: "additionalProperties", Message: `unknown key; did you mean "concurrency"?`},
		{Key: "worker.drain_timeout", Line: 12, Rule: "pattern"},
	}
	if se.File != path || len(se.Problems) != len(want) {
		t.Fatalf("Load() = %s with %d problems; want %s with %d:\n%v", se.File, len(se.Problems), path, len(want), err)
	}
	for i, p := range se.Problems {
		w := want[i]
		if w.Message == "" {
			w.Message = p.Message
		}
		if !reflect.DeepEqual(p, w) {
			t.Errorf("problem %d = %+v; want %+v", i, p, w)
		}
	}
	msg := err.Error()
	for _, line := range []string{
		"config " + path + ": 4 problems:",
		path + `:3: providers[0].api: "openai_chat": value must be one of 'openai_chat_completions'`,
		path + ":6: models[0].context_tokens: got string, want integer (schema rule: type)",
		path + `:11: worker.concurency: unknown key; did you mean "concurrency"? (schema rule: additionalProperties)`,
		path + `:12: worker.drain_timeout: "soon" is not valid: A Go duration string such as "90s"`,
	} {
		if !strings.Contains(msg, line) {
			t.Errorf("Load() error lacks %q:\n%s", line, msg)
		}
	}
	wd, _ := os.Getwd()
	if strings.Contains(msg, "file://") || strings.Contains(msg, wd) || strings.Contains(msg, "schema.json") {
		t.Errorf("Load() error names the schema's location:\n%s", msg)
	}
}

// TestLoadOneProblem: a single problem fits on one line, as a compiler's
// "file:line: " error does.
func TestLoadOneProblem(t *testing.T) {
	path := filepath.Join(t.TempDir(), "worker.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(validDoc, "routes:", "worker: {threads: 4}\nroutes:", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	want := "config " + path + ":9: worker.threads: unknown key (known: "
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("Load() = %v; want one line starting %q", err, want)
	}
}

// TestLoadSemanticProblems: the problems the schema cannot see name the
// file and the key too, one a line.
func TestLoadSemanticProblems(t *testing.T) {
	path := filepath.Join(t.TempDir(), "worker.yaml")
	doc := strings.Replace(validDoc, "name: default", "name: fast", 1)
	doc = strings.Replace(doc, "model: gpt-4o-mini}", "model: gpt-5}", 1)
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	want := "config " + path + ": 2 problems:\n" +
		"  " + path + `: routes[0] "fast": targets[0]: no model openai/gpt-5 is configured` + "\n" +
		"  " + path + `: routes: a route named "default" is required`
	if err == nil || err.Error() != want {
		t.Errorf("Load() = %v; want\n%s", err, want)
	}
}

func TestNearest(t *testing.T) {
	known := []string{"ack_wait", "concurrency", "drain_timeout", "max_deliver"}
	for _, tt := range []struct{ in, want string }{
		{"concurency", "concurrency"},
		{"Concurrency", "concurrency"},
		{"drain_timout", "drain_timeout"},
		{"threads", ""},
	} {
		if got := nearest(tt.in, known); got != tt.want {
			t.Errorf("nearest(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

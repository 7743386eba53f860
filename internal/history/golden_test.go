package history_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/history"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/anthropic"
	"github.com/turnstream/turnstream/internal/provider/deepseek"
	"github.com/turnstream/turnstream/internal/provider/openaichat"
	"github.com/turnstream/turnstream/internal/provider/responses"
	"github.com/turnstream/turnstream/pkg/wire"
)

var update = flag.Bool("update", false, "rewrite the golden request bodies")

// destinations the goldens project to, registered as real adapters.
var destinations = map[string]struct {
	api    provider.API
	caps   func(provider.Capabilities) provider.Capabilities
	format string
}{
	"openai":       {api: openaichat.API},
	"openai-flat":  {api: openaichat.API, caps: func(c provider.Capabilities) provider.Capabilities { c.NativeToolHistory = false; return c }},
	"deepseek":     {api: deepseek.API},
	"responses":    {api: responses.API},
	"mistral":      {api: openaichat.API, format: provider.CallIDAlnum9},
	"tiny-context": {api: openaichat.API},
	"anthropic":    {api: anthropic.API},
	"responses-native": {api: responses.API, caps: func(c provider.Capabilities) provider.Capabilities {
		c.NativeToolHistory = true
		return c
	}},
}

func registry(t *testing.T) *provider.Registry {
	t.Helper()
	reg := provider.NewRegistry()
	for name, d := range destinations {
		o := provider.AdapterOptions{BaseURL: "http://127.0.0.1:1/v1", Stream: true}
		a, err := d.api.New(o)
		if err != nil {
			t.Fatal(err)
		}
		caps := d.api.Capabilities
		if d.caps != nil {
			caps = d.caps(caps)
		}
		_, err = reg.Register(provider.Registration{ID: name, Routes: []string{name}, Adapter: a,
			Metadata: provider.Metadata{ID: name, API: d.api.Name, Replay: d.api.Replay, CallIDFormat: d.format,
				Models: []provider.Model{{Name: "m", ContextTokens: 128000, Capabilities: caps}}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// goldenCase is a session log in, one request body out per destination.
type goldenCase struct {
	// Log is the session log; the current turn is the last message's.
	Log []wire.Message `json:"log"`
	// States are the worker-only step states, keyed "<turn>.<step>".
	States map[string]history.StepState `json:"states"`
	System string                       `json:"system"`
	Tools  []wire.Tool                  `json:"tools"`
	// Budget is the token budget for prior history (0: unlimited).
	Budget int `json:"budget"`
	// To lists the destinations to project for.
	To []string `json:"to"`
}

type mapStates map[string]history.StepState

func (m mapStates) Get(_ context.Context, key string) ([]byte, bool, error) {
	// key is "<session>.<turn>.<step>"; the cases use session "s".
	st, ok := m[strings.TrimPrefix(key, "s.")]
	if !ok {
		return nil, false, nil
	}
	b, err := json.Marshal(st)
	return b, true, err
}

func TestGolden(t *testing.T) {
	reg := registry(t)
	dirs, err := filepath.Glob("testdata/golden/*.case.json")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	for _, file := range dirs {
		name := strings.TrimSuffix(filepath.Base(file), ".case.json")
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var gc goldenCase
			if err := json.Unmarshal(b, &gc); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			turn := gc.Log[len(gc.Log)-1].TurnID
			budget := gc.Budget
			if budget == 0 {
				budget = 1 << 30
			}
			sel := history.Select(gc.Log, turn, budget)
			if gc.Budget > 0 && (sel.Used > gc.Budget || len(sel.Dropped) == 0) {
				t.Errorf("selection used %d tokens of %d and dropped %d units; want it within the budget, the rest dropped", sel.Used, gc.Budget, len(sel.Dropped))
			}
			states, err := history.Load(t.Context(), mapStates(gc.States), "s", &sel)
			if err != nil {
				t.Fatal(err)
			}
			opts := history.Options{}
			if len(sel.Dropped) > 0 {
				opts.Summary = history.FallbackSummary(sel.Dropped)
			}
			proj := history.NewProjection(&sel, states, opts)
			for _, to := range gc.To {
				pc, err := reg.Prepare(provider.Target{Provider: to, Model: "m"}, &provider.Request{System: gc.System, Tools: gc.Tools, Projector: proj})
				if err != nil {
					t.Fatalf("Prepare(%s) = %v", to, err)
				}
				var pretty bytes.Buffer
				if err := json.Indent(&pretty, pc.Body(), "", "  "); err != nil {
					t.Fatal(err)
				}
				pretty.WriteByte('\n')
				out := filepath.Join("testdata/golden", name+"."+to+".body.json")
				if *update {
					if err := os.WriteFile(out, pretty.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(out)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if !bytes.Equal(pretty.Bytes(), want) {
					t.Errorf("request body for %s differs from %s:\n%s", to, out, pretty.String())
				}
			}
		})
	}
}

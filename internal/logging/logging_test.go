package logging_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/logging"
)

// TestFormats: a buffer is no terminal, so the default is JSON, every line
// of which parses; console text there has no escape codes.
func TestFormats(t *testing.T) {
	for _, tt := range []struct {
		name, format string
		json         bool
	}{
		{"default off a terminal", "", true},
		{"json", "json", true},
		{"console", "console", false},
		{"console, any case", "Console", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			log, err := logging.New(&buf, logging.Options{Format: tt.format, Level: "debug"})
			if err != nil {
				t.Fatal(err)
			}
			log.Info().Str("session_id", "s1").Msg("turn started")
			log.Warn().Err(errors.New("boom")).Str("reason", "budget_exceeded").Msg("delivery settled")
			log.Debug().Int("n", 3).Send()
			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			if len(lines) != 3 {
				t.Fatalf("%d lines; want 3:\n%s", len(lines), buf.String())
			}
			if strings.Contains(buf.String(), "\x1b[") {
				t.Errorf("output has ANSI escape codes:\n%q", buf.String())
			}
			for i, l := range lines {
				var m map[string]any
				err := json.Unmarshal([]byte(l), &m)
				switch {
				case tt.json && err != nil:
					t.Errorf("line %d does not parse: %v\n%s", i+1, err, l)
				case tt.json && (m["level"] == nil || m["time"] == nil):
					t.Errorf("line %d has no level or time: %s", i+1, l)
				case !tt.json && err == nil:
					t.Errorf("line %d is JSON; want console text: %s", i+1, l)
				}
			}
			if !tt.json && !strings.Contains(lines[1], "WRN") {
				t.Errorf("console line %q names no WRN level", lines[1])
			}
		})
	}
}

func TestLevel(t *testing.T) {
	var buf bytes.Buffer
	log, err := logging.New(&buf, logging.Options{Level: "WARN"})
	if err != nil {
		t.Fatal(err)
	}
	log.Info().Msg("quiet")
	log.Warn().Msg("loud")
	if got := strings.Count(buf.String(), "\n"); got != 1 || !strings.Contains(buf.String(), "loud") {
		t.Errorf("at level WARN logged %q; want the warning only", buf.String())
	}
}

func TestRejects(t *testing.T) {
	for _, o := range []logging.Options{{Format: "xml"}, {Level: "loud"}} {
		if _, err := logging.New(&bytes.Buffer{}, o); err == nil {
			t.Errorf("New(%+v) = nil error; want one", o)
		}
	}
}

func TestIsTerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	f, err := os.Create(t.TempDir() + "/log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, out := range map[string]io.Writer{"a pipe": w, "a file": f, "a buffer": &bytes.Buffer{}} {
		if logging.IsTerminal(out) {
			t.Errorf("IsTerminal(%s) = true", name)
		}
	}
}

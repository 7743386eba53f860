package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestDemo runs `turnstream demo` as a newcomer would, with nothing else
// running, and checks that it shows the whole turn.
func TestDemo(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := dispatch(ctx, []string{"demo", "--latency", "0s"}, &out); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"> What time is it, and what is 17 * 23?",
		"→ get_time {\"timezone\":\"UTC\"}",
		"→ calculate {\"expression\":\"17 * 23\"}",
		"← calculate: 391",
		"Here is what I found:",
		"✓ turn.completed: 2 steps, 2 tool calls",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestUnknownCommand(t *testing.T) {
	var out bytes.Buffer
	if err := dispatch(t.Context(), []string{"nope"}, &out); err == nil || !strings.Contains(err.Error(), `unknown command "nope"`) {
		t.Errorf("dispatch(nope) = %v; want an unknown command error", err)
	}
}

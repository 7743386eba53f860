package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/demotools"
	"github.com/turnstream/turnstream/internal/stack"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestReplay records the demo's turn on an embedded stack, then replays it
// with `turnstream replay` against that server, as an operator would.
func TestReplay(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	st, err := stack.Start(ctx, stack.Options{StoreDir: t.TempDir(), Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := client.New(st.Conn)
	if err != nil {
		t.Fatal(err)
	}
	turn, err := c.Submit(ctx, wire.TurnRequest{SessionID: "demo", TurnID: "t1", Tools: demotools.Tools(),
		Input: []wire.InputMessage{{Role: wire.RoleUser, Content: defaultPrompt}}})
	if err != nil {
		t.Fatal(err)
	}
	defer turn.Close()
	if res, err := turn.Wait(ctx); err != nil || res.Terminal.Type != wire.EventTurnCompleted {
		t.Fatalf("recorded turn: %+v, %v; want it completed", res, err)
	}

	var out bytes.Buffer
	if err := dispatch(ctx, []string{"replay", "--nats-url", st.NATSURL, "--session", "demo", "--turn", "t1"}, &out); err != nil {
		t.Fatalf("replay: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"> " + defaultPrompt,
		"→ calculate {\"expression\":\"17 * 23\"}",
		"← calculate: 391",
		"✓ turn.completed: 2 steps, 2 tool calls",
		"replay matches the recorded turn (5 messages, ",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("replay output lacks %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	err = dispatch(ctx, []string{"replay", "--nats-url", st.NATSURL, "--session", "demo", "--turn", "t2"}, &out)
	if err == nil || !strings.Contains(err.Error(), "unknown turn") {
		t.Errorf("replay of an unknown turn = %v; want an unknown turn error", err)
	}
	if err := dispatch(ctx, []string{"replay", "--session", "demo"}, &out); err == nil || !strings.Contains(err.Error(), "--turn are required") {
		t.Errorf("replay without --turn = %v; want a usage error", err)
	}
}

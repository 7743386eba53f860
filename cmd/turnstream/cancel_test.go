package main

import (
	"context"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/demotools"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/internal/stack"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestCancelCommand cancels a running turn (it waits on tools nobody
// serves) with `turnstream cancel S T`: the command returns once a worker
// stored the cancel, and the turn ends turn.failed (cancelled). Without a
// worker, the command fails saying no worker answered.
func TestCancelCommand(t *testing.T) {
	st := startStack(t, stack.Options{Tools: map[string]toolworker.Handler{}})
	ctx, cancel := context.WithTimeout(t.Context(), cmdWait)
	defer cancel()
	c, err := client.New(st.Conn)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := c.Submit(ctx, wire.TurnRequest{SessionID: "cx", TurnID: "waits", Tools: demotools.Tools(),
		Input: []wire.InputMessage{{Role: wire.RoleUser, Content: defaultPrompt}}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	for {
		u, err := tr.Next(ctx)
		if err != nil {
			t.Fatalf("following the turn: %v", err)
		}
		if u.Event != nil && u.Event.Type == wire.EventToolDispatched {
			break
		}
		if u.Event != nil && u.Event.Terminal() {
			t.Fatalf("the turn ended (%s) before it waited on its tools", u.Event.Type)
		}
	}

	out, err := run(t, "cancel", "cx", "waits", "--nats-url", st.NATSURL)
	if err != nil || out != "cancel of turn waits of session cx stored\n" {
		t.Fatalf("turnstream cancel cx waits = %q, %v; want it stored", out, err)
	}
	res, err := tr.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Terminal.Type != wire.EventTurnFailed || res.Terminal.Payload["reason"] != "cancelled" {
		t.Errorf("the cancelled turn ended %s %v; want turn.failed (cancelled)", res.Terminal.Type, res.Terminal.Payload)
	}

	if _, err := run(t, "cancel", "cx", "a b", "--nats-url", st.NATSURL); err == nil {
		t.Error("turnstream cancel of an invalid turn id succeeded; want an error")
	}

	bare := natstest.Start(t)
	_, err = run(t, "cancel", "cx", "waits", "--nats-url", bare.URL())
	if err == nil || !strings.Contains(err.Error(), "no worker answered") {
		t.Errorf("turnstream cancel without a worker = %v; want a no worker answered error", err)
	}
}

package ops_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/internal/ops"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

const wait = 30 * time.Second

// until polls check until cond holds for its error, failing the test
// after wait.
func until(t *testing.T, what string, check func() error, cond func(error) bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		err := check()
		if cond(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s: last %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func isNil(err error) bool { return err == nil }

func says(s string) func(error) bool {
	return func(err error) bool { return err != nil && strings.Contains(err.Error(), s) }
}

// TestToolWorkerReadiness: a tool worker is ready once connected with each
// tool bound or waiting for its consumer, unready while its NATS server
// is gone, and ready again once it is back.
func TestToolWorkerReadiness(t *testing.T) {
	srv := natstest.Start(t)
	_, admin := srv.JetStream()
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	if err := (bus.Topology{}).Ensure(ctx, admin); err != nil {
		t.Fatal(err)
	}
	if _, err := (bus.Topology{}).EnsureToolConsumer(ctx, admin, "bound"); err != nil {
		t.Fatal(err)
	}

	nc := srv.Connect()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	tools := ops.NewTools("bound", "lazy")
	ready := ops.All(func() error { return ops.Connected(nc) }, tools.Ready)
	if err := ready(); !says("starting")(err) {
		t.Errorf("ready before Serve = %v; want the tools starting", err)
	}
	serveCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	handler := func(context.Context, wire.ToolCall) (toolworker.Result, error) { return toolworker.Result{}, nil }
	go func() {
		done <- toolworker.Serve(serveCtx, js, map[string]toolworker.Handler{"bound": handler, "lazy": handler}, toolworker.WithObserver(tools))
	}()
	t.Cleanup(func() { stop(); <-done })

	until(t, "ready: one tool bound, one waiting for its consumer", ready, isNil)
	srv.Shutdown()
	until(t, "unready naming NATS", ready, says("nats"))
	srv.Restart()
	until(t, "ready again", ready, isNil)
}

func TestToolsReadyNamesTheTool(t *testing.T) {
	tools := ops.NewTools("a", "b")
	tools.ToolState("a", toolworker.ToolBound)
	tools.ToolState("b", toolworker.ToolUnbound)
	tools.ToolState("other", toolworker.ToolUnbound) // not tracked
	if err := tools.Ready(); err == nil || err.Error() != "tool b: unbound" {
		t.Errorf("Ready() = %v; want tool b: unbound", err)
	}
	tools.ToolState("b", toolworker.ToolWaiting)
	if err := tools.Ready(); err != nil {
		t.Errorf("Ready() = %v; want nil", err)
	}
}

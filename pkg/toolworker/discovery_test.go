package toolworker_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// echo answers every call with its arguments.
func echo(_ context.Context, call wire.ToolCall) (toolworker.Result, error) {
	return toolworker.Result{Content: call.Arguments}, nil
}

// info asks the turnstream-tools services for their INFO until one
// answers.
func info(t *testing.T, nc *nats.Conn) micro.Info {
	t.Helper()
	for deadline := time.Now().Add(wait); ; time.Sleep(20 * time.Millisecond) {
		m, err := nc.Request("$SRV.INFO.turnstream-tools", nil, time.Second)
		if err == nil {
			var i micro.Info
			if err := json.Unmarshal(m.Data, &i); err != nil {
				t.Fatalf("INFO answer %s: %v", m.Data, err)
			}
			return i
		}
		if time.Now().After(deadline) {
			t.Fatalf("INFO of turnstream-tools: %v; want an answer", err)
		}
	}
}

// TestServeRegistersService: Serve registers turnstream-tools, with the
// version WithVersion gives, the prefix and the config endpoint under it;
// the service stops with Serve.
func TestServeRegistersService(t *testing.T) {
	e := newEnv(t, &bus.Topology{Subjects: wire.Subjects{Prefix: "acme.turn"}})
	s := e.serve(t, map[string]toolworker.Handler{tool: echo}, toolworker.WithPrefix("acme.turn"), toolworker.WithVersion("v2.3.4"))
	op := e.srv.Connect()
	i := info(t, op)
	if i.Version != "2.3.4" || i.Metadata["prefix"] != "acme.turn" || i.Metadata["instance"] == "" {
		t.Errorf("INFO = %+v; want version 2.3.4, prefix acme.turn and an instance", i)
	}
	if len(i.Endpoints) != 1 || i.Endpoints[0].Subject != "acme.turn.svc.tools.config" {
		t.Errorf("INFO endpoints = %+v; want config on acme.turn.svc.tools.config", i.Endpoints)
	}
	m, err := op.Request("acme.turn.svc.tools.config", nil, wait)
	if err != nil {
		t.Fatalf("config request: %v", err)
	}
	var reply struct {
		Config struct {
			Tools []struct{ Name, Subject string }
		}
	}
	if err := json.Unmarshal(m.Data, &reply); err != nil || len(reply.Config.Tools) != 1 || reply.Config.Tools[0].Subject != "acme.turn.tool."+tool {
		t.Errorf("config = %s (%v); want the one tool on acme.turn.tool.%s", m.Data, err, tool)
	}
	if err := s.stop(); err != nil {
		t.Fatalf("Serve() = %v", err)
	}
	for deadline := time.Now().Add(wait); ; time.Sleep(20 * time.Millisecond) {
		_, err := op.Request("$SRV.PING.turnstream-tools", nil, time.Second)
		if errors.Is(err, nats.ErrNoResponders) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("PING after Serve returned: %v; want no responders", err)
		}
	}
}

// TestServeWithoutDiscovery: WithDiscovery(false) registers nothing.
func TestServeWithoutDiscovery(t *testing.T) {
	e := newEnv(t, &bus.Topology{})
	e.serve(t, map[string]toolworker.Handler{tool: echo}, toolworker.WithDiscovery(false))
	results := e.follow(t, "s1")
	e.publishCall(t, wire.JSON, newCall("s1", tool, "call_1"))
	results.next(t) // Serve is serving
	if _, err := e.srv.Connect().Request("$SRV.PING", nil, time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Errorf("PING = %v; want no responders", err)
	}
}

// TestServeGoesOnWhenDiscoveryRefused: a tool worker whose user may not
// subscribe to $SRV logs that it is not registered and serves its calls.
func TestServeGoesOnWhenDiscoveryRefused(t *testing.T) {
	srv := natstest.StartWithUsers(t,
		natstest.User("admin", "pw", nil, nil),
		natstest.User("tw", "pw", nil, []string{"_INBOX.>"}))
	admin := srv.ConnectAs("admin", "pw")
	ajs, err := jetstream.New(admin)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{nc: admin, js: ajs}
	e.ensure(t, bus.Topology{})
	results := e.follow(t, "s1")

	tw := srv.ConnectAs("tw", "pw", nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	tjs, err := jetstream.New(tw)
	if err != nil {
		t.Fatal(err)
	}
	refused := newSignal("not registered as a NATS service")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- toolworker.Serve(ctx, tjs, map[string]toolworker.Handler{tool: echo}, toolworker.WithLogger(testLogger(t, refused)))
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve() = %v; want nil", err)
		}
	}()
	await(t, refused.C, "the refused registration's log line")
	e.publishCall(t, wire.JSON, newCall("s1", tool, "call_1"))
	if _, got := results.next(t); got.CallID != "call_1" {
		t.Errorf("result = %+v; want call_1's", got)
	}
}

package bus_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/pkg/wire"
)

// toolEnv is a server with the topology, a bus opened on it and a count
// of the tool-consumer creations the server was asked for.
type toolEnv struct {
	nc  *nats.Conn
	js  jetstream.JetStream
	bus *bus.Bus
	sub *nats.Subscription
}

func newToolEnv(t *testing.T, topo bus.Topology) *toolEnv {
	t.Helper()
	srv := natstest.Start(t)
	nc, js := srv.JetStream()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	if err := topo.Ensure(ctx, js); err != nil {
		t.Fatalf("Ensure() = %v", err)
	}
	// Every consumer create or update is a request on this subject: the
	// subscription counts those of TURN_TOOLS.
	sub, err := nc.SubscribeSync("$JS.API.CONSUMER.CREATE." + wire.StreamTools + ".>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	_, bjs := srv.JetStream() // the worker's own connection
	b, err := topo.Open(ctx, bjs, zerolog.New(zerolog.NewTestWriter(t)))
	if err != nil {
		t.Fatal(err)
	}
	return &toolEnv{nc: nc, js: js, bus: b, sub: sub}
}

// creates counts the tool-consumer creates the server was asked for so
// far: the flush's answer comes after every request routed before it.
func (e *toolEnv) creates(t *testing.T) int {
	t.Helper()
	if err := e.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	n, _, err := e.sub.Pending()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (e *toolEnv) dispatch(t *testing.T, tool, callID string) error {
	t.Helper()
	w := e.bus.Turn("s1", "t1", wire.JSON, nil)
	return w.Dispatch(t.Context(), &wire.ToolCall{
		SessionID: "s1", TurnID: "t1", Step: 1, CallID: callID, Name: tool,
		Arguments: `{}`, Deadline: time.Now().Add(time.Minute), Token: "tok",
	})
}

// pending is how many calls tool's consumer has not delivered yet.
func (e *toolEnv) pending(t *testing.T, tool string) uint64 {
	t.Helper()
	c, err := e.js.Consumer(t.Context(), wire.StreamTools, bus.ToolConsumer(tool))
	if err != nil {
		t.Fatalf("Consumer(%s) = %v", bus.ToolConsumer(tool), err)
	}
	return c.CachedInfo().NumPending
}

// TestDispatchCreatesToolConsumer: the first dispatch of a tool creates
// its durable consumer as the topology describes it, before the call is
// stored, so the call waits in it for a tool worker.
func TestDispatchCreatesToolConsumer(t *testing.T) {
	topo := bus.Topology{ToolAckWait: 2 * time.Second, ToolInactiveThreshold: 3 * time.Hour}
	e := newToolEnv(t, topo)
	if _, err := e.js.Consumer(t.Context(), wire.StreamTools, bus.ToolConsumer("lookup")); err == nil {
		t.Fatal("tool consumer exists before any dispatch")
	}
	if err := e.dispatch(t, "lookup", "c1"); err != nil {
		t.Fatalf("Dispatch() = %v", err)
	}
	c, err := e.js.Consumer(t.Context(), wire.StreamTools, bus.ToolConsumer("lookup"))
	if err != nil {
		t.Fatalf("Consumer(tool-lookup) = %v; want the consumer the dispatch created", err)
	}
	cfg := c.CachedInfo().Config
	if cfg.FilterSubject != "turn.tool.lookup" || cfg.AckWait != 2*time.Second || cfg.InactiveThreshold != 3*time.Hour ||
		cfg.AckPolicy != jetstream.AckExplicitPolicy || cfg.Durable != "tool-lookup" {
		t.Errorf("tool consumer config: durable %q, filter %q, ack wait %s, inactive threshold %s, ack policy %v; want tool-lookup, turn.tool.lookup, 2s, 3h, explicit",
			cfg.Durable, cfg.FilterSubject, cfg.AckWait, cfg.InactiveThreshold, cfg.AckPolicy)
	}
	if n := c.CachedInfo().NumPending; n != 1 {
		t.Errorf("calls pending in tool-lookup = %d; want 1", n)
	}
	// Defaults: a 5s ack wait and an hour's inactive threshold.
	if cfg := (bus.Topology{}).ToolConsumerConfig("x"); cfg.AckWait != bus.DefaultToolAckWait || cfg.InactiveThreshold != bus.DefaultToolInactiveThreshold {
		t.Errorf("default tool consumer: ack wait %s, inactive threshold %s; want %s, %s", cfg.AckWait, cfg.InactiveThreshold, bus.DefaultToolAckWait, bus.DefaultToolInactiveThreshold)
	}
}

// TestConcurrentDispatchesCreateOnce: many turns dispatching a new tool at
// once create its consumer once, and later dispatches do not ask again.
func TestConcurrentDispatchesCreateOnce(t *testing.T) {
	e := newToolEnv(t, bus.Topology{})
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() { errs <- e.dispatch(t, "lookup", fmt.Sprintf("c%d", i)) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Dispatch() = %v", err)
		}
	}
	if err := e.dispatch(t, "lookup", "later"); err != nil {
		t.Fatal(err)
	}
	if got := e.creates(t); got != 1 {
		t.Errorf("consumer creates asked for = %d; want 1", got)
	}
	if got := e.pending(t, "lookup"); got != n+1 {
		t.Errorf("calls pending = %d; want %d", got, n+1)
	}
}

// TestFailedEnsureDispatchesAndRetries: when the tool's consumer cannot be
// made (here, another consumer of the work queue already takes the tool's
// calls, which the server refuses to share), the call is still stored,
// once, and the next dispatch tries again; once the way is clear, it
// creates the consumer and the calls stored meanwhile are in it.
func TestFailedEnsureDispatchesAndRetries(t *testing.T) {
	e := newToolEnv(t, bus.Topology{})
	ctx := t.Context()
	if _, err := e.js.CreateConsumer(ctx, wire.StreamTools, jetstream.ConsumerConfig{
		Durable: "squatter", FilterSubject: "turn.tool.>", AckPolicy: jetstream.AckExplicitPolicy,
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.dispatch(t, "lookup", "c1"); err != nil {
		t.Fatalf("Dispatch() with a consumer that cannot be ensured = %v; want the call dispatched all the same", err)
	}
	if err := e.dispatch(t, "lookup", "c1"); err != nil { // the same call again: deduplicated
		t.Fatal(err)
	}
	if got := e.creates(t); got != 3 {
		t.Errorf("consumer creates asked for = %d; want 3 (the squatter's, then one per dispatch)", got)
	}
	if _, err := e.js.Consumer(ctx, wire.StreamTools, bus.ToolConsumer("lookup")); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Fatalf("Consumer(tool-lookup) = %v; want ErrConsumerNotFound", err)
	}
	if err := e.js.DeleteConsumer(ctx, wire.StreamTools, "squatter"); err != nil {
		t.Fatal(err)
	}
	if err := e.dispatch(t, "lookup", "c2"); err != nil {
		t.Fatal(err)
	}
	if got := e.pending(t, "lookup"); got != 2 {
		t.Errorf("calls pending = %d; want 2 (c1 once, c2)", got)
	}
}

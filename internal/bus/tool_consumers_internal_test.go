package bus

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestToolConsumerEnsuredAgain: an ensure is trusted for half the
// consumers' inactive threshold; after that the next dispatch ensures the
// consumer again, so one removed meanwhile (by an operator, or by the
// server once no tool worker pulled from it) comes back.
func TestToolConsumerEnsuredAgain(t *testing.T) {
	srv := natstest.Start(t)
	_, js := srv.JetStream()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	topo := Topology{ToolInactiveThreshold: time.Hour}
	if err := topo.Ensure(ctx, js); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newToolConsumers(js, topo, zerolog.Nop())
	c.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	exists := func() bool {
		_, err := js.Consumer(ctx, wire.StreamTools, ToolConsumer("lookup"))
		if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}

	if err := c.ensure(ctx, "lookup"); err != nil || !exists() {
		t.Fatalf("ensure() = %v, consumer exists %v; want it created", err, exists())
	}
	if err := js.DeleteConsumer(ctx, wire.StreamTools, ToolConsumer("lookup")); err != nil {
		t.Fatal(err)
	}
	advance(29 * time.Minute)
	if err := c.ensure(ctx, "lookup"); err != nil || exists() {
		t.Fatalf("ensure() within half the threshold = %v, consumer exists %v; want the cached ensure trusted", err, exists())
	}
	advance(time.Minute)
	if err := c.ensure(ctx, "lookup"); err != nil || !exists() {
		t.Fatalf("ensure() after half the threshold = %v, consumer exists %v; want it created again", err, exists())
	}
}

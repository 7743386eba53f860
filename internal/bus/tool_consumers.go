package bus

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// maxToolConsumersKept bounds how many tools' ensures a process remembers.
// Tool names come from requests (a hostile one may name many); past the
// bound the memory is dropped whole, and each tool's consumer is ensured
// again at its next dispatch.
const maxToolConsumersKept = 4096

// toolConsumers ensures the durable consumer of a tool before the tool's
// first call is dispatched, once per process and tool: concurrent
// dispatches of a new tool wait for one ensure, a failed ensure is tried
// again by the next dispatch, and an ensure older than half the consumers'
// inactive threshold is made again (an operator, or the server's inactive
// threshold, may have removed the consumer since).
type toolConsumers struct {
	js   jetstream.JetStream
	topo Topology // with defaults
	log  zerolog.Logger
	now  func() time.Time

	mu sync.Mutex
	// ensured is when each tool's consumer was last ensured.
	ensured map[string]time.Time
	// flights are the ensures in progress.
	flights map[string]*toolFlight
}

// toolFlight is one ensure in progress; err is set before done is closed.
type toolFlight struct {
	done chan struct{}
	err  error
}

func newToolConsumers(js jetstream.JetStream, t Topology, log zerolog.Logger) *toolConsumers {
	return &toolConsumers{
		js: js, topo: t.withDefaults(), log: log, now: time.Now,
		ensured: map[string]time.Time{}, flights: map[string]*toolFlight{},
	}
}

// refresh is how long an ensure is trusted.
func (c *toolConsumers) refresh() time.Duration { return c.topo.ToolInactiveThreshold / 2 }

// ensure makes sure tool's consumer exists, as ToolConsumerConfig says. A
// dispatch that finds another one ensuring the same tool waits for it and
// takes its outcome. The ensure itself is bounded by ensureCallTimeout and
// does not end with the context of the dispatch that started it, so that
// a cancelled turn does not fail the others waiting on it.
func (c *toolConsumers) ensure(ctx context.Context, tool string) error {
	c.mu.Lock()
	if at, ok := c.ensured[tool]; ok && c.now().Sub(at) < c.refresh() {
		c.mu.Unlock()
		return nil
	}
	if f := c.flights[tool]; f != nil {
		c.mu.Unlock()
		select {
		case <-f.done:
			return f.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f := &toolFlight{done: make(chan struct{})}
	c.flights[tool] = f
	c.mu.Unlock()

	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ensureCallTimeout)
	_, err := c.topo.EnsureToolConsumer(ectx, c.js, tool)
	cancel()

	c.mu.Lock()
	delete(c.flights, tool)
	if err == nil {
		if len(c.ensured) >= maxToolConsumersKept {
			clear(c.ensured)
		}
		c.ensured[tool] = c.now()
	} else {
		delete(c.ensured, tool)
	}
	f.err = err
	close(f.done)
	c.mu.Unlock()
	return err
}

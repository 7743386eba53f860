package ops

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/turnstream/turnstream/pkg/toolworker"
)

// All is the readiness of every check: the first one's error, in order,
// or nil.
func All(checks ...func() error) func() error {
	return func() error {
		for _, c := range checks {
			if err := c(); err != nil {
				return err
			}
		}
		return nil
	}
}

// Connected reports whether nc is connected: an error naming its status
// otherwise (reconnecting, closed, ...). The client's own view, so it
// turns the moment the connection is lost.
func Connected(nc *nats.Conn) error {
	if nc.IsConnected() {
		return nil
	}
	return fmt.Errorf("nats: %s", strings.ToLower(nc.Status().String()))
}

// Tools is a tool worker's readiness, a toolworker.Observer of its tools'
// bindings (toolworker.WithObserver): ready once every tool is bound to
// its consumer, or waits for the workers to create it (they do at the
// tool's first call, which the tool worker then binds at once); not ready
// before a tool's first binding attempt or while one fails (no claims
// bucket, no server, a permission refused).
type Tools struct {
	mu     sync.Mutex
	states map[string]toolworker.ToolState
}

var _ toolworker.Observer = (*Tools)(nil)

// NewTools tracks the tools named.
func NewTools(names ...string) *Tools {
	t := &Tools{states: make(map[string]toolworker.ToolState, len(names))}
	for _, n := range names {
		t.states[n] = 0
	}
	return t
}

// ToolState records a tool's binding state.
func (t *Tools) ToolState(tool string, s toolworker.ToolState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.states[tool]; ok {
		t.states[tool] = s
	}
}

// CallDone is no part of readiness.
func (*Tools) CallDone(string, toolworker.CallOutcome, time.Duration) {}

// Ready reports the first tool, by name, that is neither bound nor
// waiting for its consumer.
func (t *Tools) Ready() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(t.states)) {
		switch s := t.states[name]; s {
		case toolworker.ToolBound, toolworker.ToolWaiting:
		case 0:
			return fmt.Errorf("tool %s: starting", name)
		default:
			return fmt.Errorf("tool %s: %s", name, s)
		}
	}
	return nil
}

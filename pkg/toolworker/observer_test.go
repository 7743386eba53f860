package toolworker_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// recorder is an Observer that keeps what it is told.
type recorder struct {
	mu       sync.Mutex
	states   []toolworker.ToolState
	outcomes []toolworker.CallOutcome
	changed  chan struct{}
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{}, 64)} }

func (r *recorder) ToolState(_ string, s toolworker.ToolState) {
	r.mu.Lock()
	r.states = append(r.states, s)
	r.mu.Unlock()
	r.changed <- struct{}{}
}

func (r *recorder) CallDone(_ string, o toolworker.CallOutcome, took time.Duration) {
	r.mu.Lock()
	if took >= 0 {
		r.outcomes = append(r.outcomes, o)
	}
	r.mu.Unlock()
	r.changed <- struct{}{}
}

// until waits for what the recorder was told to satisfy cond.
func (r *recorder) until(t *testing.T, what string, cond func(states []toolworker.ToolState, outcomes []toolworker.CallOutcome) bool) {
	t.Helper()
	deadline := time.After(wait)
	for {
		r.mu.Lock()
		done := cond(slices.Clone(r.states), slices.Clone(r.outcomes))
		r.mu.Unlock()
		if done {
			return
		}
		select {
		case <-r.changed:
		case <-deadline:
			r.mu.Lock()
			defer r.mu.Unlock()
			t.Fatalf("timed out waiting for %s: states %v, outcomes %v", what, r.states, r.outcomes)
		}
	}
}

// TestObserverSeesBindingAndOutcomes: an observer hears that the tool
// waits for its consumer, then is bound, and how each call ended: ok,
// an error result, rejected, and replayed from its claim.
func TestObserverSeesBindingAndOutcomes(t *testing.T) {
	e := newEnv(t, &bus.Topology{})
	rec := newRecorder()
	e.serve(t, map[string]toolworker.Handler{
		tool: func(_ context.Context, call wire.ToolCall) (toolworker.Result, error) {
			if call.CallID == "bad" {
				return toolworker.Result{}, errors.New("no such city")
			}
			return toolworker.Result{Content: "fine"}, nil
		},
	}, toolworker.WithObserver(rec))
	rec.until(t, "the tool to wait for its consumer", func(s []toolworker.ToolState, _ []toolworker.CallOutcome) bool {
		return slices.Equal(s, []toolworker.ToolState{toolworker.ToolWaiting})
	})

	results := e.follow(t, "s1")
	e.publishCall(t, wire.JSON, newCall("s1", tool, "good"))
	results.next(t)
	e.publishCall(t, wire.JSON, newCall("s1", tool, "bad"))
	results.next(t)
	e.publishRaw(t, tool, wire.JSON.ContentType(), []byte("{not json"))
	e.publishCall(t, wire.JSON, newCall("s1", tool, "good")) // dispatched again: answered from its claim

	want := []toolworker.CallOutcome{toolworker.CallOK, toolworker.CallError, toolworker.CallRejected, toolworker.CallReplayed}
	rec.until(t, "four calls", func(_ []toolworker.ToolState, o []toolworker.CallOutcome) bool { return len(o) >= len(want) })
	rec.mu.Lock()
	defer rec.mu.Unlock()
	// The last two may run in either order.
	if got := slices.Sorted(slices.Values(rec.outcomes)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("outcomes = %v; want %v in any order", rec.outcomes, want)
	}
	if want := []toolworker.ToolState{toolworker.ToolWaiting, toolworker.ToolBound}; !slices.Equal(rec.states, want) {
		t.Errorf("states = %v; want %v", rec.states, want)
	}
}

func TestWithObserverRejectsNil(t *testing.T) {
	e := newEnv(t, &bus.Topology{})
	err := toolworker.Serve(t.Context(), e.js, map[string]toolworker.Handler{tool: ok("x")}, toolworker.WithObserver(nil))
	if !errors.Is(err, toolworker.ErrInvalidOption) {
		t.Errorf("Serve(WithObserver(nil)) = %v; want ErrInvalidOption", err)
	}
}

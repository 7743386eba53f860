package metrics

import (
	"time"

	"github.com/turnstream/turnstream/pkg/toolworker"
)

// Tools is the toolworker.Observer that counts a tool worker's calls by
// tool and outcome, with their durations (toolworker.WithObserver).
func (s *Set) Tools() toolworker.Observer { return toolObserver{s} }

type toolObserver struct{ set *Set }

func (toolObserver) ToolState(string, toolworker.ToolState) {}

func (o toolObserver) CallDone(tool string, outcome toolworker.CallOutcome, took time.Duration) {
	o.set.toolCalls.WithLabelValues(tool, string(outcome)).Inc()
	o.set.toolDuration.WithLabelValues(tool).Observe(took.Seconds())
}

package worker_test

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/pkg/wire"
)

// BenchmarkSessionOrder measures what keeping a session's turns in order
// costs: b.N turns queued in one session (each waits, parked, for the one
// before it) next to b.N turns in b.N sessions (no waits), on the same
// worker and server. handoff-ms is the time from a turn's terminal event
// to the next turn's turn.accepted in the same session (p50 and max); the
// ns/op of the two runs compare a queued turn to a free one.
//
//	go test ./internal/worker -run '^$' -bench SessionOrder -benchtime 50x
func BenchmarkSessionOrder(b *testing.B) {
	for _, mode := range []string{"distinct_sessions", "one_session"} {
		b.Run(mode, func(b *testing.B) {
			e := newEnv(b, mockllm.Default(mockllm.DefaultOptions{}))
			e.startWorker()
			ctx := ctxFor(b)
			session := func(i int) string {
				if mode == "one_session" {
					return "bench-one"
				}
				return fmt.Sprintf("bench-%d", i)
			}
			b.ResetTimer()
			for i := range b.N {
				req := fmt.Sprintf(`{"session_id":%q,"turn_id":"t%d","input":[{"role":"user","content":"hello"}]}`, session(i), i)
				if _, err := e.js.Publish(ctx, "turn.submit."+session(i), []byte(req)); err != nil {
					b.Fatal(err)
				}
			}
			for i := range b.N {
				waitTerminal(b, e.js, session(i), fmt.Sprintf("t%d", i))
			}
			b.StopTimer()
			if mode != "one_session" {
				return
			}
			evs, _ := records[wire.SessionEvent](b, e.js, wire.StreamEvents, wire.Subjects{}.Event("bench-one"))
			accepted, ended := map[string]time.Time{}, map[string]time.Time{}
			for _, ev := range evs {
				switch {
				case ev.Type == wire.EventTurnAccepted:
					accepted[ev.TurnID] = ev.Time
				case ev.Terminal():
					ended[ev.TurnID] = ev.Time
				}
			}
			var gaps []float64
			for i := 1; i < b.N; i++ {
				prev, next := ended[fmt.Sprintf("t%d", i-1)], accepted[fmt.Sprintf("t%d", i)]
				if !prev.IsZero() && !next.IsZero() {
					gaps = append(gaps, float64(next.Sub(prev).Microseconds())/1000)
				}
			}
			if len(gaps) > 0 {
				sort.Float64s(gaps)
				b.ReportMetric(gaps[len(gaps)/2], "handoff-p50-ms")
				b.ReportMetric(gaps[len(gaps)-1], "handoff-max-ms")
			}
		})
	}
}

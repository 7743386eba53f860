package worker_test

import (
	"fmt"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/internal/worker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// BenchmarkTurnRoundTrips counts the round trips to NATS a text turn waits
// for: the worker's connection goes through a loopback link that delivers
// everything the server sends delay late (natstest.SlowLink), so each
// request the worker waits for costs it one delay, and the rest (the mock
// provider, the worker's own work) little next to it. Per turn of a
// session it reports, in delays:
//
//   - rtt-to-provider: from the stored request to the provider's request,
//     counting the delivery of the request to the worker (one);
//   - rtt-to-terminal: from the stored request to the stored terminal event
//     (seen by a subscriber on a direct connection), the delivery included.
//
// Turn 1 of a session finds nothing cached and no lease; later turns of the
// same session run on the worker that read it before, after the lease's
// release. Between turns the worker is left to ack and release (two more
// round trips, after the terminal event).
//
//	go test ./internal/worker -run '^$' -bench TurnRoundTrips -benchtime 20x
func BenchmarkTurnRoundTrips(b *testing.B) {
	const delay = 25 * time.Millisecond
	e := newEnv(b, mockllm.Default(mockllm.DefaultOptions{}))
	var mu sync.Mutex
	var asked time.Time
	mock := e.http.Config.Handler
	e.http.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if asked.IsZero() {
			asked = time.Now()
		}
		mu.Unlock()
		mock.ServeHTTP(w, r)
	})
	slow, err := nats.Connect(natstest.SlowLink(b, e.srv.URL(), delay))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(slow.Close)
	e.startWorkerWith(func(o *worker.Options) { o.Conn = slow })
	ctx := ctxFor(b)
	events := make(chan *nats.Msg, 64)
	sub, err := e.nc.ChanSubscribe(wire.Subjects{}.LiveEvent("rtt"), events)
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Unsubscribe() //nolint:errcheck // the connection closes with the test
	var first, firstEnd float64
	var toProvider, toEnd []float64
	for i := 0; b.Loop(); i++ {
		mu.Lock()
		asked = time.Time{}
		mu.Unlock()
		req := fmt.Sprintf(`{"session_id":"rtt","turn_id":"t%d","input":[{"role":"user","content":"hello"}]}`, i)
		if _, err := e.js.Publish(ctx, "turn.submit.rtt", []byte(req)); err != nil {
			b.Fatal(err)
		}
		stored := time.Now()
		var ended time.Time
		for ended.IsZero() {
			select {
			case m := <-events:
				var ev wire.SessionEvent
				if wire.JSON.Unmarshal(m.Data, &ev) == nil && ev.TurnID == fmt.Sprintf("t%d", i) && ev.Terminal() {
					ended = time.Now()
				}
			case <-ctx.Done():
				b.Fatal("no terminal event")
			}
		}
		mu.Lock()
		p := asked.Sub(stored).Seconds() / delay.Seconds()
		mu.Unlock()
		t := ended.Sub(stored).Seconds() / delay.Seconds()
		// The worker acks the request and releases the lease after the
		// terminal event: let it, so the next turn does not count them.
		b.StopTimer()
		time.Sleep(8 * delay)
		b.StartTimer()
		if i == 0 {
			first, firstEnd = p, t
			continue
		}
		toProvider, toEnd = append(toProvider, p), append(toEnd, t)
	}
	b.ReportMetric(first, "rtt-to-provider-turn1")
	b.ReportMetric(firstEnd, "rtt-to-terminal-turn1")
	if len(toProvider) > 0 {
		b.ReportMetric(median(toProvider), "rtt-to-provider")
		b.ReportMetric(median(toEnd), "rtt-to-terminal")
	}
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

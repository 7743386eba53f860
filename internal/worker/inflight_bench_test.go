package worker_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/pkg/wire"
)

// BenchmarkInFlight measures what a worker holds per turn in flight: n
// slow turns (the mock provider waits between frames) submitted at once,
// measured once the provider is streaming all of them. Everything runs in
// this process (the server and the mock provider too), so heap-bytes/turn
// and goroutines/turn are upper bounds of the worker's share; a heap
// profile taken then (INFLIGHT_HEAP=file; pprof -sample_index=inuse_space)
// says whose.
//
//	INFLIGHT_HEAP=/tmp/inflight.heap go test ./internal/worker -run '^$' -bench InFlight -benchtime 1x
func BenchmarkInFlight(b *testing.B) {
	const n = 2000
	for b.Loop() {
		e := newEnv(b, mockllm.Default(mockllm.DefaultOptions{Latency: 500 * time.Millisecond}))
		e.cfg.Worker.Concurrency = n
		var asked atomic.Int64
		mock := e.http.Config.Handler
		e.http.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			asked.Add(1)
			mock.ServeHTTP(w, r)
		})
		e.http.Client().Transport.(*http.Transport).MaxIdleConnsPerHost = n
		e.startWorker()
		// Longer than ctxFor: n turns queue for one worker on a shared
		// machine.
		ctx, cancel := context.WithTimeout(b.Context(), 5*time.Minute)
		defer cancel()
		var ended atomic.Int64
		sub, err := e.nc.Subscribe(wire.Subjects{}.LiveEvent("*"), func(m *nats.Msg) {
			var ev wire.SessionEvent
			if wire.JSON.Unmarshal(m.Data, &ev) == nil && ev.Terminal() {
				ended.Add(1)
			}
		})
		if err != nil {
			b.Fatal(err)
		}
		before := inUse()
		g0 := runtime.NumGoroutine()
		for i := range n {
			req := fmt.Sprintf(`{"session_id":"mem%d","turn_id":"t1","input":[{"role":"user","content":"hello"}]}`, i)
			if _, err := e.js.Publish(ctx, fmt.Sprintf("turn.submit.mem%d", i), []byte(req)); err != nil {
				b.Fatal(err)
			}
		}
		for asked.Load() < n {
			select {
			case <-ctx.Done():
				b.Fatalf("%d of %d turns reached the provider", asked.Load(), n)
			case <-time.After(50 * time.Millisecond):
			}
		}
		after := inUse()
		if path := os.Getenv("INFLIGHT_HEAP"); path != "" {
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			_ = pprof.WriteHeapProfile(f)
			f.Close()
		}
		b.ReportMetric(float64(after-before)/n, "heap+stack-bytes/turn")
		b.ReportMetric(float64(runtime.NumGoroutine()-g0)/n, "goroutines/turn")
		for ended.Load() < n {
			select {
			case <-ctx.Done():
				b.Fatalf("%d of %d turns ended", ended.Load(), n)
			case <-time.After(50 * time.Millisecond):
			}
		}
		_ = sub.Unsubscribe()
	}
}

// inUse is the heap and stacks in use after a collection.
func inUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

package worker_test

import (
	"testing"

	"github.com/turnstream/turnstream/internal/worker"
)

// TestAsyncWindow: the window of unacknowledged publishes grows with the
// turns a worker runs, within nats.go's default and a memory bound.
func TestAsyncWindow(t *testing.T) {
	for _, tt := range []struct{ concurrency, want int }{
		{0, 4096}, {1, 4096}, {64, 4096}, {100, 6400}, {1024, 65536}, {10000, 65536},
	} {
		if got := worker.AsyncWindow(tt.concurrency); got != tt.want {
			t.Errorf("AsyncWindow(%d) = %d; want %d", tt.concurrency, got, tt.want)
		}
	}
}

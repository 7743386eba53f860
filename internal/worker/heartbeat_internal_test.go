package worker

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// beaten is a delivery whose in-progress ack answers err.
type beaten struct {
	delivery // nil: only InProgress is called
	err      error
	beats    atomic.Int64
}

func (b *beaten) InProgress() error {
	b.beats.Add(1)
	return b.err
}

// SyncBuffer collects log lines from several goroutines (the worker's
// tests, inside and outside the package, read their logs with it).
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestHeartbeatOfASettledDelivery: a beat that finds its delivery acked
// already (it settled after the loop listed it) is no failure and logs
// nothing; any other failure is logged.
func TestHeartbeatOfASettledDelivery(t *testing.T) {
	var out SyncBuffer
	log := zerolog.New(&out)
	h := newHeartbeats(time.Millisecond)
	acked := &beaten{err: jetstream.ErrMsgAlreadyAckd}
	broken := &beaten{err: errors.New("link down")}
	h.add(acked, log)
	h.add(broken, log)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); h.run(ctx) }()
	for acked.beats.Load() < 3 || broken.beats.Load() < 3 {
		select {
		case <-time.After(time.Millisecond):
		case <-t.Context().Done():
			t.Fatal("no beats")
		}
	}
	cancel()
	<-done
	got := out.String()
	if strings.Contains(got, "already acknowledged") {
		t.Errorf("a settled delivery's beat was logged:\n%s", got)
	}
	if !strings.Contains(got, "link down") {
		t.Errorf("a failed beat was not logged:\n%s", got)
	}
}

package worker

import (
	"context"
	"sync"
	"time"
)

// A turn whose session is busy with an earlier turn is parked: its
// delivery stays with this worker (kept alive by its heartbeat), gives its
// slot back, and waits for a change of its session's lease (the earlier
// turn's release) to try again. It neither polls nor holds a slot. A lease
// update the watch misses (a reconnect) is caught by a re-check every
// parkRecheck. Past maxParkedPerSlot parked deliveries per slot, a waiting
// turn is handed back to the server with a delay instead.

const (
	// parkRecheck is the safety net of a parked delivery.
	parkRecheck = 5 * time.Second
	// maxParkedPerSlot bounds parked deliveries: their memory is their
	// decoded requests.
	maxParkedPerSlot = 16
)

// parking holds the parked deliveries by session.
type parking struct {
	mu      sync.Mutex
	max     int
	n       int
	waiting map[string]map[*parked]struct{}
}

// parked is one parked delivery: wake receives when its session's lease
// changed.
type parked struct {
	session string
	wake    chan struct{}
}

func newParking(max int) *parking {
	return &parking{max: max, waiting: map[string]map[*parked]struct{}{}}
}

// add registers a delivery that may have to wait; ok is false when the
// parking is full.
func (p *parking) add(session string) (*parked, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n >= p.max {
		return nil, false
	}
	w := &parked{session: session, wake: make(chan struct{}, 1)}
	if p.waiting[session] == nil {
		p.waiting[session] = map[*parked]struct{}{}
	}
	p.waiting[session][w] = struct{}{}
	p.n++
	return w, true
}

func (p *parking) remove(w *parked) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.waiting[w.session][w]; !ok {
		return
	}
	delete(p.waiting[w.session], w)
	if len(p.waiting[w.session]) == 0 {
		delete(p.waiting, w.session)
	}
	p.n--
}

// wakeSession tells every delivery parked for session to try again.
func (p *parking) wakeSession(session string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for w := range p.waiting[session] {
		select {
		case w.wake <- struct{}{}:
		default: // already woken
		}
	}
}

// watchLeases feeds lease updates to the parking until ctx ends,
// re-establishing the watch after a failure.
func (w *Worker) watchLeases(ctx context.Context) {
	for delay := 100 * time.Millisecond; ctx.Err() == nil; delay = min(2*delay, 5*time.Second) {
		err := w.state.WatchLeases(ctx, w.parking.wakeSession)
		if ctx.Err() != nil {
			return
		}
		w.log.Warn().Err(err).Msg("lease watch failed; parked turns re-check on their own meanwhile")
		sleep(ctx, delay)
	}
}

// slot is a delivery's share of the worker's concurrency.
type slot struct {
	ch   chan struct{}
	held bool
}

func (s *slot) release() {
	if s.held {
		<-s.ch
		s.held = false
	}
}

func (s *slot) acquire(ctx context.Context) bool {
	if s.held {
		return true
	}
	select {
	case s.ch <- struct{}{}:
		s.held = true
		return true
	case <-ctx.Done():
		return false
	}
}

// wait parks a delivery until its session's lease changes, the re-check
// is due, or stop; it reports false on stop.
func (p *parked) wait(stop <-chan struct{}) bool {
	t := time.NewTimer(parkRecheck)
	defer t.Stop()
	select {
	case <-p.wake:
	case <-t.C:
	case <-stop:
		return false
	}
	return true
}

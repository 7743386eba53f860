package worker

import (
	"errors"
	"fmt"
	"strings"
	"sync"
)

// readiness is why a worker is not ready to take turns, kept by its
// consume loop (Ready).
type readiness struct {
	mu  sync.Mutex
	err error
}

// Errors Ready reports.
var (
	errStarting = errors.New("worker: starting: the submit consumer is not bound")
	errDraining = errors.New("worker: draining")
)

func (r *readiness) set(err error) {
	r.mu.Lock()
	r.err = err
	r.mu.Unlock()
}

func (r *readiness) get() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Ready reports why the worker cannot take turns now, nil when it can: its
// connection is up, the topology is ensured (New did it) and Run is bound
// to the submit stream's consumer, with its last fetch answered. It turns
// unready the moment the connection is lost, while fetching fails (the
// consumer removed under it), and for good once Run drains.
func (w *Worker) Ready() error {
	if !w.nc.IsConnected() {
		return fmt.Errorf("worker: nats %s", strings.ToLower(w.nc.Status().String()))
	}
	return w.ready.get()
}

// InFlight is the number of turn deliveries the worker holds now: decoding,
// running, parked behind a session's running turn, or settling.
func (w *Worker) InFlight() int { return int(w.held.Load()) }

// Instance is the id this worker process names itself by in its session
// leases and intake guards.
func (w *Worker) Instance() string { return w.instance }

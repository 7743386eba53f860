package discovery

import (
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/pkg/wire"
)

// WorkerState is what the turnstream-worker service reports of a running
// worker (internal/worker.Worker).
type WorkerState interface {
	// Ready reports why the worker cannot take turns now, nil when it can.
	Ready() error
	// InFlight is the number of turn deliveries the worker holds now.
	InFlight() int
	// Instance is the id the worker's leases name it by.
	Instance() string
}

// WorkerStats are a worker's live counters: STATS shows them as its config
// endpoint's data.
type WorkerStats struct {
	// TurnsInFlight are the turn deliveries the worker holds now
	// (decoding, running, parked or settling).
	TurnsInFlight int `json:"turns_in_flight"`
	// Concurrency is how many turns it runs at once at most.
	Concurrency int `json:"concurrency"`
	// Ready is whether it can take turns now; NotReady says why not.
	Ready    bool   `json:"ready"`
	NotReady string `json:"not_ready,omitempty"`
}

// WorkerOptions describe the worker Worker registers.
type WorkerOptions struct {
	// Subjects carries the deployment's subject prefix (config nats.prefix).
	Subjects wire.Subjects
	// Version is the binary's version. Default: version.String("").
	Version string
	// Concurrency is the worker's configured concurrency.
	Concurrency int
	// Config is the worker's configuration summary (config.Summary): it
	// must hold no secret.
	Config any
	// Log receives the service's asynchronous errors.
	Log zerolog.Logger
}

// Worker registers w on nc as the turnstream-worker service.
func Worker(nc *nats.Conn, w WorkerState, o WorkerOptions) (*Service, error) {
	return Register(nc, Spec{
		Name:        WorkerName,
		Role:        WorkerRole,
		Description: "turnstream worker: runs LLM agent turns from " + o.Subjects.Submit("*"),
		Version:     o.Version,
		Subjects:    o.Subjects,
		Instance:    w.Instance(),
		Config:      o.Config,
		Stats: func() any {
			st := WorkerStats{TurnsInFlight: w.InFlight(), Concurrency: o.Concurrency, Ready: true}
			if err := w.Ready(); err != nil {
				st.Ready, st.NotReady = false, err.Error()
			}
			return st
		},
		Log: o.Log,
	})
}

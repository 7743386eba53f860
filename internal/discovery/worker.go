package discovery

import (
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/config"
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

// Worker registers w, a worker running cfg, on nc as the turnstream-worker
// service: its config endpoint answers cfg.Summary(), which holds no
// secret. version is the binary's ("" for the build info's).
func Worker(nc *nats.Conn, w WorkerState, cfg *config.Config, version string, log zerolog.Logger) (*Service, error) {
	subjects := wire.Subjects{Prefix: cfg.NATS.Prefix}
	concurrency := cfg.Worker.Concurrency
	return Register(nc, Spec{
		Name:        WorkerName,
		Role:        WorkerRole,
		Description: "turnstream worker: runs LLM agent turns from " + subjects.Submit("*"),
		Version:     version,
		Subjects:    subjects,
		Instance:    w.Instance(),
		Config:      cfg.Summary(),
		Stats: func() any {
			st := WorkerStats{TurnsInFlight: w.InFlight(), Concurrency: concurrency, Ready: true}
			if err := w.Ready(); err != nil {
				st.Ready, st.NotReady = false, err.Error()
			}
			return st
		},
		Log: log,
	})
}

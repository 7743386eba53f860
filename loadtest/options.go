package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"
)

// Options configure a load test run. Zero fields take the defaults noted.
type Options struct {
	// NATSURL is a running server with a worker and a provider. Default "":
	// start the embedded stack.
	NATSURL string
	// Turns is how many turns to submit. Default 200.
	Turns int
	// Concurrency is how many turns are in flight at once. Default 32.
	Concurrency int
	// Tools offers the demo tools (get_time, calculate) with every turn; the
	// mock provider then calls both, so a turn has two steps. Default false.
	Tools bool
	// MockLatency is the embedded mock provider's delay before each
	// streamed frame. Default 0. Only with the embedded stack.
	MockLatency time.Duration
	// TurnTimeout bounds one turn from submit to its terminal event.
	// Default 2m.
	TurnTimeout time.Duration
	// SkipBaseline skips the raw JetStream baseline. Default false.
	SkipBaseline bool
	// Log receives the embedded stack's logs. Default: none.
	Log zerolog.Logger
}

const (
	defaultTurns       = 200
	defaultConcurrency = 32
	defaultTurnTimeout = 2 * time.Minute
	// maxTurns bounds a run.
	maxTurns = 1_000_000
)

func (o *Options) applyDefaults() {
	if o.Turns == 0 {
		o.Turns = defaultTurns
	}
	if o.Concurrency == 0 {
		o.Concurrency = defaultConcurrency
	}
	if o.TurnTimeout == 0 {
		o.TurnTimeout = defaultTurnTimeout
	}
}

// Validate reports options that cannot run.
func (o *Options) Validate() error {
	var errs []error
	if o.Turns < 1 || o.Turns > maxTurns {
		errs = append(errs, fmt.Errorf("loadtest: turns must be 1 to %d, got %d", maxTurns, o.Turns))
	}
	if o.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("loadtest: concurrency must be at least 1, got %d", o.Concurrency))
	}
	if o.MockLatency < 0 {
		errs = append(errs, fmt.Errorf("loadtest: latency must not be negative, got %s", o.MockLatency))
	}
	if o.MockLatency != 0 && o.NATSURL != "" {
		errs = append(errs, errors.New("loadtest: latency applies to the embedded mock provider only, not with a NATS URL"))
	}
	if o.TurnTimeout < 0 {
		errs = append(errs, fmt.Errorf("loadtest: turn timeout must not be negative, got %s", o.TurnTimeout))
	}
	return errors.Join(errs...)
}

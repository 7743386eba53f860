package main

import (
	"errors"
	"sync/atomic"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/turnstream/turnstream/internal/metrics"
	"github.com/turnstream/turnstream/internal/ops"
)

// addMetricsFlag registers --metrics-addr, of the commands that run
// workers or tool workers.
func addMetricsFlag(f *pflag.FlagSet, addr *string) {
	f.StringVar(addr, "metrics-addr", "", "serve "+ops.PathMetrics+" (Prometheus), "+ops.PathHealth+" (liveness) and "+
		ops.PathReady+" (readiness) on this address, such as :9090 (default: none)")
}

// opsServer is the server of --metrics-addr and the metrics it serves. A
// nil *opsServer (no --metrics-addr) has no metrics and serves nothing.
type opsServer struct {
	srv     *ops.Server
	metrics *metrics.Set
	ready   atomic.Pointer[func() error]
}

var errStarting = errors.New("starting")

// startOps serves a new metrics set on addr; nil when addr is empty. It
// answers /readyz "starting" until setReady.
func startOps(addr string, log zerolog.Logger) (*opsServer, error) {
	if addr == "" {
		return nil, nil
	}
	o := &opsServer{metrics: metrics.New()}
	srv, err := ops.Start(ops.Options{Addr: addr, Gatherer: o.metrics.Gatherer(), Log: log, Ready: func() error {
		if ready := o.ready.Load(); ready != nil {
			return (*ready)()
		}
		return errStarting
	}})
	if err != nil {
		return nil, err
	}
	o.srv = srv
	log.Info().Str("addr", srv.Addr()).Msg("serving metrics and probes")
	return o, nil
}

// Metrics is what the command counts into: nil without a server.
func (o *opsServer) Metrics() *metrics.Set {
	if o == nil {
		return nil
	}
	return o.metrics
}

// setReady makes ready the readiness /readyz reports.
func (o *opsServer) setReady(ready func() error) {
	if o != nil {
		o.ready.Store(&ready)
	}
}

// banner is the line dev prints about the server: none without one.
func (o *opsServer) banner() string {
	if o == nil {
		return ""
	}
	return "\n  metrics and probes at http://" + o.srv.Addr() + " (" + ops.PathMetrics + ", " + ops.PathHealth + ", " + ops.PathReady + ")"
}

// Close stops serving.
func (o *opsServer) Close() {
	if o != nil {
		o.srv.Close() //nolint:errcheck // logged by the server
	}
}

package main

import (
	"context"
	"errors"
	"net/http"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/discovery"
	"github.com/turnstream/turnstream/internal/worker"
)

// workerOptions are the flags of `turnstream worker`.
type workerOptions struct {
	log     *logFlags
	conn    *natsFlags
	config  string
	metrics string
	otlp    string
}

func newWorkerCmd() *cobra.Command {
	var o workerOptions
	cmd := &cobra.Command{
		Use:   "worker --config F [--nats-url URL] [--metrics-addr :9090] [--otlp-endpoint URL]",
		Short: "run a production worker against a NATS server",
		Long: `Run a production worker against a NATS server. The first SIGINT or SIGTERM
drains it (it stops fetching and gives running turns worker.drain_timeout to
finish, handing the rest back); a second one exits at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWorker(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	o.log = addLogFlags(f, "info")
	o.conn = addNATSFlags(f, natsURLConfigUsage)
	f.StringVar(&o.config, "config", "", "worker config file (required)")
	addMetricsFlag(f, &o.metrics)
	addTraceFlag(f, &o.otlp)
	return cmd
}

func runWorker(ctx context.Context, o workerOptions) error {
	log, err := o.log.logger()
	if err != nil {
		return err
	}
	if o.config == "" {
		return errors.New("worker: --config is required (see README: pointing a worker at a provider)")
	}
	cfg, err := config.Load(o.config)
	if err != nil {
		return err
	}
	srv, err := startOps(o.metrics, log)
	if err != nil {
		return err
	}
	defer srv.Close()
	tp, err := startTracing(ctx, o.otlp, "turnstream-worker", log)
	if err != nil {
		return err
	}
	defer stopTracing(ctx, tp, log)
	nc, err := o.conn.connect(o.conn.URLWith(cfg), "turnstream worker", nats.MaxReconnects(-1))
	if err != nil {
		return err
	}
	defer nc.Drain() //nolint:errcheck // closing anyway
	w, err := worker.New(ctx, worker.Options{Conn: nc, Config: cfg, Log: log, HTTPClient: &http.Client{}, Metrics: srv.Metrics(), TracerProvider: tp.TracerProvider()})
	if err != nil {
		return err
	}
	srv.setReady(w.Ready)
	svc, err := discovery.Worker(nc, w, cfg, versionString(), log)
	if err != nil {
		log.Warn().Err(err).Msg("not registered as a NATS service; running anyway")
	}
	defer svc.Stop() //nolint:errcheck // before the connection drains; nil when not registered
	return w.Run(ctx)
}

package main

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/nats-io/nats.go"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/worker"
)

func runWorker(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("worker", "--config F [--nats-url URL] [--metrics-addr :9090]", "info")
	cfgPath := f.String("config", "", "worker config file (required)")
	conn := f.natsFlags("NATS server URL (default $NATS_URL, else config nats.url, else " + defaultNATSURL + ")")
	metricsAddr := f.metricsAddr()
	if err := f.Parse(args); err != nil {
		return err
	}
	log, err := f.logger()
	if err != nil {
		return err
	}
	if *cfgPath == "" {
		return errors.New("worker: --config is required (see README: pointing a worker at a provider)")
	}
	cfg, err := config.Load(*cfgPath)
	if err != nil {
		return err
	}
	srv, err := startOps(*metricsAddr, log)
	if err != nil {
		return err
	}
	defer srv.Close()
	nc, err := conn.connect(conn.URLWith(cfg), "turnstream worker", nats.MaxReconnects(-1))
	if err != nil {
		return err
	}
	defer nc.Drain() //nolint:errcheck // closing anyway
	w, err := worker.New(ctx, worker.Options{Conn: nc, Config: cfg, Log: log, HTTPClient: &http.Client{}, Metrics: srv.Metrics()})
	if err != nil {
		return err
	}
	srv.setReady(w.Ready)
	return w.Run(ctx)
}

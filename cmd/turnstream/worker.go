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
	f := newFlags("worker", "--config F [--nats-url URL]", "info")
	cfgPath := f.String("config", "", "worker config file (required)")
	conn := f.natsFlags("NATS server URL (default $NATS_URL, else config nats.url, else " + defaultNATSURL + ")")
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
	nc, err := conn.connect(conn.URLWith(cfg), "turnstream worker", nats.MaxReconnects(-1))
	if err != nil {
		return err
	}
	defer nc.Drain() //nolint:errcheck // closing anyway
	w, err := worker.New(ctx, worker.Options{Conn: nc, Config: cfg, Log: log, HTTPClient: &http.Client{}})
	if err != nil {
		return err
	}
	return w.Run(ctx)
}

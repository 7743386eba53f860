package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/demotools"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/worker"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

func getenv(k string) string { return os.Getenv(k) }

func runTools(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("tools", "[--nats-url URL] [--inbox-prefix P]", "info")
	conn := f.natsFlags(natsURLUsage)
	prefix := f.String("prefix", wire.DefaultPrefix, "subject prefix")
	if err := f.Parse(args); err != nil {
		return err
	}
	log, err := f.logger()
	if err != nil {
		return err
	}
	nc, err := conn.connect(conn.URL(), "turnstream demo tools", nats.MaxReconnects(-1))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	log.Info().Msg("serving get_time and calculate")
	return toolworker.Serve(ctx, js, demotools.Handlers(), toolworker.WithIdempotent(demotools.Idempotent()...), toolworker.WithLogger(log), toolworker.WithPrefix(*prefix))
}

func runStreams(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("streams", "[--config F] [--nats-url URL] [--inbox-prefix P]", "info")
	conn := f.natsFlags(natsURLUsage)
	cfgPath := f.String("config", "", "worker config (for prefix, replicas, ack wait)")
	if err := f.Parse(args); err != nil {
		return err
	}
	log, err := f.logger()
	if err != nil {
		return err
	}
	cfg := &config.Config{}
	if *cfgPath != "" {
		var err error
		if cfg, err = config.Load(*cfgPath); err != nil {
			return err
		}
	} else {
		cfg.ApplyDefaults()
	}
	nc, err := conn.connect(conn.URL(), "turnstream streams")
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	topo, err := worker.EnsureTopology(ctx, js, cfg, log)
	if err != nil {
		return err
	}
	for _, s := range topo.Streams() {
		fmt.Fprintf(out, "stream %-14s %s\n", s.Name, s.Subjects[0])
	}
	fmt.Fprintf(out, "consumer %s on %s\n", bus.WorkerConsumer, wire.StreamSubmit)
	return nil
}

func runMockLLM(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("mockllm", "[--addr 127.0.0.1:8080]", "info")
	addr := f.String("addr", "127.0.0.1:8080", "listen address")
	latency := f.Duration("latency", 15*time.Millisecond, "delay per streamed chunk")
	if err := f.Parse(args); err != nil {
		return err
	}
	srv := mockllm.New(mockllm.Default(mockllm.DefaultOptions{Latency: *latency}))
	return srv.ListenAndServe(ctx, *addr, func(base string) {
		fmt.Fprintf(out, "mock provider at %s (POST %s/chat/completions); Ctrl-C stops\n", base, base)
	})
}

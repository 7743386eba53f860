package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/stack"
)

func runDev(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("dev", "[--config F] [--listen 127.0.0.1:4222] [--metrics-addr :9090]", "info")
	cfgPath := f.String("config", "", "worker config file (default: the embedded mock provider)")
	listen := f.String("listen", "127.0.0.1:4222", "NATS client address of the embedded server")
	store := f.String("store", "", "JetStream store directory (default: a temporary one, removed on exit)")
	latency := f.Duration("latency", 15*time.Millisecond, "mock provider delay per streamed chunk")
	metricsAddr := f.metricsAddr()
	if err := f.Parse(args); err != nil {
		return err
	}
	log, err := f.logger()
	if err != nil {
		return err
	}
	var cfg *config.Config
	if *cfgPath != "" {
		if cfg, err = config.Load(*cfgPath); err != nil {
			return err
		}
	}
	srv, err := startOps(*metricsAddr, log)
	if err != nil {
		return err
	}
	defer srv.Close()
	st, err := stack.Start(ctx, stack.Options{Listen: *listen, StoreDir: *store, Config: cfg, MockLatency: *latency, Log: log, Metrics: srv.Metrics()})
	if err != nil {
		return err
	}
	defer st.Close()
	srv.setReady(st.Ready)
	provider := "config " + *cfgPath
	if st.MockURL != "" {
		provider = "mock at " + st.MockURL
	}
	fmt.Fprintf(out, `turnstream dev: NATS with JetStream at %s
  provider: %s
  worker and demo tools (get_time, calculate) running%s

Try, from another terminal:
  nats --server %s pub turn.submit.s1 '{"session_id":"s1","input":[{"role":"user","content":"What is 17 * 23?"}],"tools":[{"name":"calculate","parameters":{"type":"object","properties":{"expression":{"type":"string","examples":["17 * 23"]}},"required":["expression"]}}]}'
  go run ./cmd/turnstream submit --nats-url %s --session s2 --demo-tools "What time is it?"
  go run ./cmd/turnstream tap --nats-url %s

Ctrl-C stops.
`, st.NATSURL, provider, srv.banner(), st.NATSURL, st.NATSURL, st.NATSURL)
	<-ctx.Done()
	fmt.Fprintln(out, "\nstopping")
	return st.Err()
}

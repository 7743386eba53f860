package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/stack"
)

// devOptions are the flags of `turnstream dev`.
type devOptions struct {
	log     *logFlags
	config  string
	listen  string
	store   string
	latency time.Duration
	metrics string
	otlp    string
}

func newDevCmd() *cobra.Command {
	var o devOptions
	cmd := &cobra.Command{
		Use:   "dev [--config F] [--listen 127.0.0.1:4222] [--metrics-addr :9090] [--otlp-endpoint URL]",
		Short: "run the embedded stack (NATS, mock provider, worker, demo tools) for other clients",
		Long: `Run the embedded stack (NATS with JetStream, the mock provider unless --config
names real ones, a worker and the demo tools) until Ctrl-C. The first Ctrl-C
stops it cleanly: the worker drains (running turns finish, still served by
the tools and the provider), then the tools, the provider and the server
stop. A second Ctrl-C exits at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDev(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	o.log = addLogFlags(f, "info")
	f.StringVar(&o.config, "config", "", "worker config file (default: the embedded mock provider)")
	f.StringVar(&o.listen, "listen", "127.0.0.1:4222", "NATS client address of the embedded server (port -1: a random one)")
	f.StringVar(&o.store, "store", "", "JetStream store directory (default: a temporary one, removed on exit)")
	f.DurationVar(&o.latency, "latency", 15*time.Millisecond, "mock provider delay per streamed chunk")
	addMetricsFlag(f, &o.metrics)
	addTraceFlag(f, &o.otlp)
	return cmd
}

func runDev(ctx context.Context, o devOptions, out io.Writer) error {
	log, err := o.log.logger()
	if err != nil {
		return err
	}
	var cfg *config.Config
	if o.config != "" {
		if cfg, err = config.Load(o.config); err != nil {
			return err
		}
	}
	srv, err := startOps(o.metrics, log)
	if err != nil {
		return err
	}
	defer srv.Close()
	tp, err := startTracing(ctx, o.otlp, "turnstream-dev", log)
	if err != nil {
		return err
	}
	defer stopTracing(ctx, tp, log)
	st, err := stack.Start(ctx, stack.Options{TracerProvider: tp.TracerProvider(), Listen: o.listen, StoreDir: o.store, Config: cfg, MockLatency: o.latency, Log: log, Metrics: srv.Metrics(), Version: versionString()})
	if err != nil {
		return err
	}
	defer st.Close()
	srv.setReady(st.Ready)
	provider := "config " + o.config
	if st.MockURL != "" {
		provider = "mock at " + st.MockURL
	}
	fmt.Fprintf(out, `turnstream dev: NATS with JetStream at %s
  provider: %s
  worker and demo tools (get_time, calculate) running%s

Try, from another terminal:
  go run ./cmd/turnstream tap --nats-url %s --all
  nats --server %s pub turn.submit.s2 '{"session_id":"s2","turn_id":"calc-1","input":[{"role":"user","content":"What is 17 * 23?"}],"tools":[{"name":"calculate","parameters":{"type":"object","properties":{"expression":{"type":"string","examples":["17 * 23"]}},"required":["expression"]}}]}'
  go run ./cmd/turnstream submit --nats-url %s --session s3 --demo-tools "What time is it?"

Ctrl-C stops (running turns finish first); a second Ctrl-C exits at once.
`, st.NATSURL, provider, srv.banner(), st.NATSURL, st.NATSURL, st.NATSURL)
	<-ctx.Done()
	fmt.Fprintln(out, "\nstopping: the worker drains, then the tools, the provider and NATS stop")
	st.Close()
	fmt.Fprintln(out, "stopped")
	return st.Err()
}

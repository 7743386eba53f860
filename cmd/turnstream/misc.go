package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/demotools"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/ops"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/toolworker/mcptools"
	"github.com/turnstream/turnstream/pkg/wire"
)

// toolsOptions are the flags of `turnstream tools`.
type toolsOptions struct {
	log       *logFlags
	conn      *natsFlags
	prefix    string
	mcp       []string
	mcpConfig string
	demo      bool
	demoSet   bool // --demo was given: otherwise it is on without MCP servers
	list      bool
	metrics   string
	otlp      string
}

func newToolsCmd() *cobra.Command {
	var o toolsOptions
	cmd := &cobra.Command{
		Use:   "tools [--nats-url URL] [--inbox-prefix P] [--mcp SOURCE]... [--mcp-config FILE] [--demo] [--list] [--metrics-addr :9090] [--otlp-endpoint URL]",
		Short: "serve the demo tools, or the tools of MCP servers (--mcp), against a NATS server",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.demoSet = cmd.Flags().Changed("demo")
			return runTools(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	o.log = addLogFlags(f, "info")
	o.conn = addNATSFlags(f, natsURLUsage)
	f.StringVar(&o.prefix, "prefix", wire.DefaultPrefix, "subject prefix")
	f.StringArrayVar(&o.mcp, "mcp", nil, "an MCP server whose tools to serve (repeatable): cmd:COMMAND [ARG...] (words split on spaces), "+
		"an http(s):// streamable HTTP URL, or a YAML mapping such as '{command: ./server, args: [--root, /data], prefix: fs_}'")
	f.StringVar(&o.mcpConfig, "mcp-config", "", "YAML file listing MCP servers (servers: [{name, command, args, env, url, prefix}])")
	f.BoolVar(&o.demo, "demo", false, "serve the demo tools get_time and calculate (default: when no MCP server is given)")
	f.BoolVar(&o.list, "list", false, "print the definitions of the tools served, a JSON array for submit --tools, and exit")
	addMetricsFlag(f, &o.metrics)
	addTraceFlag(f, &o.otlp)
	return cmd
}

func runTools(ctx context.Context, o toolsOptions, out io.Writer) error {
	log, err := o.log.logger()
	if err != nil {
		return err
	}
	var sources []mcptools.Source
	if o.mcpConfig != "" {
		if sources, err = mcptools.LoadConfig(o.mcpConfig); err != nil {
			return err
		}
	}
	for _, spec := range o.mcp {
		src, err := mcptools.ParseSource(spec)
		if err != nil {
			return fmt.Errorf("tools: --mcp: %w", err)
		}
		sources = append(sources, src)
	}
	if !o.demoSet {
		o.demo = len(sources) == 0
	}

	handlers, idempotent, defs := map[string]toolworker.Handler{}, []string{}, []wire.Tool{}
	if o.demo {
		handlers, idempotent, defs = demotools.Handlers(), demotools.Idempotent(), demotools.Tools()
	}
	if len(sources) > 0 {
		srv, err := mcptools.Start(ctx, sources, mcptools.WithLogger(log), mcptools.WithStderr(os.Stderr),
			mcptools.WithReserved(slices.Collect(maps.Keys(handlers))...))
		if err != nil {
			return err
		}
		defer srv.Close() // after Serve has drained
		maps.Copy(handlers, srv.Handlers())
		idempotent, defs = append(idempotent, srv.Idempotent()...), append(defs, srv.Tools()...)
	}
	if len(handlers) == 0 {
		return errors.New("tools: nothing to serve: give --mcp or --mcp-config, or leave --demo on")
	}
	if o.list {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(defs)
	}

	srv, err := startOps(o.metrics, log)
	if err != nil {
		return err
	}
	defer srv.Close()
	tp, err := startTracing(ctx, o.otlp, "turnstream-tools", log)
	if err != nil {
		return err
	}
	defer stopTracing(ctx, tp, log)
	nc, err := o.conn.connect(o.conn.URL(), "turnstream tools", nats.MaxReconnects(-1))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	names := slices.Sorted(maps.Keys(handlers))
	bound := ops.NewTools(names...)
	srv.setReady(ops.All(func() error { return ops.Connected(nc) }, bound.Ready))
	opts := []toolworker.Option{toolworker.WithLogger(log), toolworker.WithPrefix(o.prefix), toolworker.WithObserver(bound), toolworker.WithVersion(versionString())}
	if m := srv.Metrics(); m != nil {
		opts = append(opts, toolworker.WithObserver(m.Tools()))
	}
	if tp.On() {
		opts = append(opts, toolworker.WithTracerProvider(tp.TracerProvider()))
	}
	if len(idempotent) > 0 {
		opts = append(opts, toolworker.WithIdempotent(idempotent...))
	}
	log.Info().Strs("tools", names).Msg("serving tools")
	return toolworker.Serve(ctx, js, handlers, opts...)
}

// streamsOptions are the flags of `turnstream streams`.
type streamsOptions struct {
	log    *logFlags
	conn   *natsFlags
	config string
}

func newStreamsCmd() *cobra.Command {
	var o streamsOptions
	cmd := &cobra.Command{
		Use:   "streams [--config F] [--nats-url URL] [--inbox-prefix P]",
		Short: "create or update the streams and consumers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runStreams(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	o.log = addLogFlags(f, "info")
	o.conn = addNATSFlags(f, natsURLConfigUsage)
	f.StringVar(&o.config, "config", "", "worker config: the topology is the one its workers ensure (nats and worker settings)")
	return cmd
}

func runStreams(ctx context.Context, o streamsOptions, out io.Writer) error {
	log, err := o.log.logger()
	if err != nil {
		return err
	}
	cfg := &config.Config{}
	if o.config != "" {
		if cfg, err = config.Load(o.config); err != nil {
			return err
		}
	} else {
		cfg.ApplyDefaults()
	}
	nc, err := o.conn.connect(o.conn.URLWith(cfg), "turnstream streams")
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	topo, err := bus.EnsureTopology(ctx, js, cfg.Topology(), log)
	if err != nil {
		return err
	}
	for _, s := range topo.Streams() {
		fmt.Fprintf(out, "stream %-14s %s\n", s.Name, s.Subjects[0])
	}
	fmt.Fprintf(out, "consumer %s on %s\n", bus.WorkerConsumer, wire.StreamSubmit)
	return nil
}

// mockLLMOptions are the flags of `turnstream mockllm`.
type mockLLMOptions struct {
	addr    string
	latency time.Duration
}

func newMockLLMCmd() *cobra.Command {
	var o mockLLMOptions
	cmd := &cobra.Command{
		Use:   "mockllm [--addr 127.0.0.1:8080]",
		Short: "run the mock OpenAI-compatible provider alone",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMockLLM(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	addLogFlags(f, "info") // accepted as before; the mock logs nothing
	f.StringVar(&o.addr, "addr", "127.0.0.1:8080", "listen address")
	f.DurationVar(&o.latency, "latency", 15*time.Millisecond, "delay per streamed chunk")
	return cmd
}

func runMockLLM(ctx context.Context, o mockLLMOptions, out io.Writer) error {
	srv := mockllm.New(mockllm.Default(mockllm.DefaultOptions{Latency: o.latency}))
	return srv.ListenAndServe(ctx, o.addr, func(base string) {
		fmt.Fprintf(out, "mock provider at %s (POST %s/chat/completions); Ctrl-C stops\n", base, base)
	})
}

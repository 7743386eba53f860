package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/demotools"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/ops"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/toolworker/mcptools"
	"github.com/turnstream/turnstream/pkg/wire"
)

func getenv(k string) string { return os.Getenv(k) }

func runTools(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("tools", "[--nats-url URL] [--inbox-prefix P] [--mcp SOURCE]... [--mcp-config FILE] [--demo] [--list] [--metrics-addr :9090]", "info")
	conn := f.natsFlags(natsURLUsage)
	prefix := f.String("prefix", wire.DefaultPrefix, "subject prefix")
	var mcpSpecs listFlag
	f.Var(&mcpSpecs, "mcp", "an MCP server whose tools to serve (repeatable): cmd:COMMAND [ARG...] (words split on spaces), "+
		"an http(s):// streamable HTTP URL, or a YAML mapping such as '{command: ./server, args: [--root, /data], prefix: fs_}'")
	mcpConfig := f.String("mcp-config", "", "YAML file listing MCP servers (servers: [{name, command, args, env, url, prefix}])")
	demo := f.Bool("demo", false, "serve the demo tools get_time and calculate (default: when no MCP server is given)")
	list := f.Bool("list", false, "print the definitions of the tools served, a JSON array for submit --tools, and exit")
	metricsAddr := f.metricsAddr()
	if err := f.Parse(args); err != nil {
		return err
	}
	if f.NArg() > 0 {
		return fmt.Errorf("tools: unexpected arguments %q", f.Args())
	}
	log, err := f.logger()
	if err != nil {
		return err
	}
	var sources []mcptools.Source
	if *mcpConfig != "" {
		if sources, err = mcptools.LoadConfig(*mcpConfig); err != nil {
			return err
		}
	}
	for _, spec := range mcpSpecs {
		src, err := mcptools.ParseSource(spec)
		if err != nil {
			return fmt.Errorf("tools: --mcp: %w", err)
		}
		sources = append(sources, src)
	}
	if !flagSet(f.FlagSet, "demo") {
		*demo = len(sources) == 0
	}

	handlers, idempotent, defs := map[string]toolworker.Handler{}, []string{}, []wire.Tool{}
	if *demo {
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
	if *list {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(defs)
	}

	srv, err := startOps(*metricsAddr, log)
	if err != nil {
		return err
	}
	defer srv.Close()
	nc, err := conn.connect(conn.URL(), "turnstream tools", nats.MaxReconnects(-1))
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
	opts := []toolworker.Option{toolworker.WithLogger(log), toolworker.WithPrefix(*prefix), toolworker.WithObserver(bound)}
	if m := srv.Metrics(); m != nil {
		opts = append(opts, toolworker.WithObserver(m.Tools()))
	}
	if len(idempotent) > 0 {
		opts = append(opts, toolworker.WithIdempotent(idempotent...))
	}
	log.Info().Strs("tools", names).Msg("serving tools")
	return toolworker.Serve(ctx, js, handlers, opts...)
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func runStreams(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("streams", "[--config F] [--nats-url URL] [--inbox-prefix P]", "info")
	conn := f.natsFlags(natsURLUsage)
	cfgPath := f.String("config", "", "worker config: the topology is the one its workers ensure (nats and worker settings)")
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
	nc, err := conn.connect(conn.URLWith(cfg), "turnstream streams")
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

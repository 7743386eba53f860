package stack

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/demotools"
	"github.com/turnstream/turnstream/internal/discovery"
	"github.com/turnstream/turnstream/internal/embedded"
	"github.com/turnstream/turnstream/internal/metrics"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/ops"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/worker"
	"github.com/turnstream/turnstream/pkg/toolworker"
)

// Options configure a Stack.
type Options struct {
	// Listen is the NATS client address. Default "127.0.0.1:-1" (random port).
	Listen string
	// StoreDir holds JetStream data. Default: a temporary directory removed
	// by Close.
	StoreDir string
	// Config names the providers; nil runs the embedded mock provider.
	Config *config.Config
	// MockLatency is the mock provider's delay per streamed frame.
	MockLatency time.Duration
	// NewAdapter, with Config, builds every provider's adapter
	// (worker.Options.NewAdapter). Default: each provider's wire API.
	NewAdapter worker.AdapterFunc
	// Clock drives the worker's provider retries (worker.Options.Clock).
	// Default: the wall clock.
	Clock provider.Clock
	// Tools are the tool handlers served, by tool name; an empty map serves
	// none. Default (nil): the demo tools.
	Tools map[string]toolworker.Handler
	// Metrics, when set, counts what the worker and the tool worker do
	// (worker.Options.Metrics, toolworker.WithObserver). Default nil.
	Metrics *metrics.Set
	// TracerProvider, when set, traces the worker's turns and the tool
	// worker's calls (worker.Options.TracerProvider,
	// toolworker.WithTracerProvider). Default nil.
	TracerProvider trace.TracerProvider
	// Version is the version the worker's and the tool worker's NATS
	// services announce (internal/discovery). Default: the build info's.
	Version string
	Log     zerolog.Logger
}

// Stack is a running all-in-one turnstream.
type Stack struct {
	// NATSURL is the embedded server's client URL.
	NATSURL string
	// MockURL is the mock provider's base URL, "" with a real config.
	MockURL string
	// Conn is a connection for the caller's clients.
	Conn *nats.Conn

	log     zerolog.Logger
	srv     *server.Server
	tempDir string
	http    *http.Client
	// worker runs the worker, tools the tool worker, mock the provider.
	// They stop in that order: a draining worker's running turns still
	// call their tools and their provider, so neither stops under them.
	stopWorker, stopTools, stopMock context.CancelFunc
	worker, tools, mock             sync.WaitGroup
	errMu                           sync.Mutex
	err                             error
	conns                           []*nats.Conn
	// ready is the worker's and the tool worker's readiness.
	ready func() error
}

// Start brings the stack up and returns once the worker and the tool worker
// are serving.
func Start(ctx context.Context, o Options) (_ *Stack, err error) {
	s := &Stack{log: o.Log}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if o.StoreDir == "" {
		if s.tempDir, err = os.MkdirTemp("", "turnstream-*"); err != nil {
			return nil, fmt.Errorf("stack: %w", err)
		}
		o.StoreDir = s.tempDir
	}
	if s.srv, err = embedded.Start(embedded.Options{Listen: o.Listen, StoreDir: o.StoreDir}); err != nil {
		return nil, err
	}
	s.NATSURL = s.srv.ClientURL()
	workerCtx, stopWorker := context.WithCancel(context.WithoutCancel(ctx))
	toolsCtx, stopTools := context.WithCancel(context.WithoutCancel(ctx))
	mockCtx, stopMock := context.WithCancel(context.WithoutCancel(ctx))
	s.stopWorker, s.stopTools, s.stopMock = stopWorker, stopTools, stopMock
	s.http = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}

	cfg := o.Config
	if cfg == nil {
		mock := mockllm.New(mockllm.Default(mockllm.DefaultOptions{Latency: o.MockLatency}))
		ready := make(chan string, 1)
		s.goRun(&s.mock, "mock provider", func() error {
			return mock.ListenAndServe(mockCtx, "127.0.0.1:0", func(u string) { ready <- u })
		})
		select {
		case s.MockURL = <-ready:
		case <-time.After(10 * time.Second):
			return nil, errors.New("stack: mock provider did not start")
		}
		cfg = config.Mock(s.MockURL)
	}
	if s.Conn, err = s.connect("turnstream client"); err != nil {
		return nil, err
	}
	wconn, err := s.connect("turnstream worker")
	if err != nil {
		return nil, err
	}
	w, err := worker.New(ctx, worker.Options{Conn: wconn, Config: cfg, Log: o.Log, HTTPClient: s.http, NewAdapter: o.NewAdapter, Clock: o.Clock, Metrics: o.Metrics, TracerProvider: o.TracerProvider})
	if err != nil {
		return nil, err
	}
	s.ready = w.Ready
	wsvc, err := discovery.Worker(wconn, w, cfg, o.Version, o.Log)
	if err != nil {
		o.Log.Warn().Err(err).Msg("worker not registered as a NATS service; running anyway")
	}
	s.goRun(&s.worker, "worker", func() error {
		defer wsvc.Stop() //nolint:errcheck // nil when not registered
		return w.Run(workerCtx)
	})

	tools, toolOpts := o.Tools, []toolworker.Option{toolworker.WithLogger(o.Log), toolworker.WithPrefix(cfg.NATS.Prefix)}
	if o.Version != "" {
		toolOpts = append(toolOpts, toolworker.WithVersion(o.Version))
	}
	if tools == nil {
		tools, toolOpts = demotools.Handlers(), append(toolOpts, toolworker.WithIdempotent(demotools.Idempotent()...))
	}
	if len(tools) == 0 {
		return s, nil
	}
	tconn, err := s.connect("turnstream tools")
	if err != nil {
		return nil, err
	}
	bound := ops.NewTools(slices.Collect(maps.Keys(tools))...)
	s.ready = ops.All(w.Ready, func() error { return ops.Connected(tconn) }, bound.Ready)
	toolOpts = append(toolOpts, toolworker.WithObserver(bound))
	if o.TracerProvider != nil {
		toolOpts = append(toolOpts, toolworker.WithTracerProvider(o.TracerProvider))
	}
	if o.Metrics != nil {
		toolOpts = append(toolOpts, toolworker.WithObserver(o.Metrics.Tools()))
	}
	tjs, err := jetstream.New(tconn)
	if err != nil {
		return nil, fmt.Errorf("stack: %w", err)
	}
	s.goRun(&s.tools, "tools", func() error { return toolworker.Serve(toolsCtx, tjs, tools, toolOpts...) })
	return s, nil
}

func (s *Stack) connect(name string) (*nats.Conn, error) {
	nc, err := nats.Connect(s.NATSURL, nats.Name(name), nats.MaxReconnects(-1))
	if err != nil {
		return nil, fmt.Errorf("stack: connect: %w", err)
	}
	s.conns = append(s.conns, nc)
	return nc, nil
}

func (s *Stack) goRun(wg *sync.WaitGroup, name string, fn func() error) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := fn(); err != nil {
			s.log.Error().Err(err).Str("component", name).Msg("stopped with an error")
			s.errMu.Lock()
			if s.err == nil {
				s.err = fmt.Errorf("stack: %s: %w", name, err)
			}
			s.errMu.Unlock()
		}
	}()
}

// Ready reports why the stack cannot take turns now, nil when it can:
// the worker's readiness (worker.Worker.Ready), then the tool worker's
// (connected, every tool bound or waiting for its consumer).
func (s *Stack) Ready() error { return s.ready() }

// Err returns the first error a component stopped with, if any.
func (s *Stack) Err() error {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.err
}

// Close stops everything and removes a temporary store. It is idempotent.
// The worker drains first (its running turns finish within its drain
// timeout, calling their tools and provider), then the tools stop, then
// the provider, then the server.
func (s *Stack) Close() {
	if s.stopWorker != nil {
		s.stopWorker()
		s.worker.Wait()
		s.stopTools()
		s.tools.Wait()
		s.http.CloseIdleConnections()
		s.stopMock()
		s.mock.Wait()
		s.stopWorker = nil
	}
	for _, nc := range s.conns {
		nc.Close()
	}
	s.conns = nil
	if s.srv != nil {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
		s.srv = nil
	}
	if s.tempDir != "" {
		os.RemoveAll(s.tempDir) //nolint:errcheck // best effort
		s.tempDir = ""
	}
}

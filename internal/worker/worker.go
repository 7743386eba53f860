package worker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/metrics"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/apis"
	"github.com/turnstream/turnstream/internal/tracing"
	"github.com/turnstream/turnstream/internal/turn"
	"github.com/turnstream/turnstream/pkg/wire"
)

// Options configure a Worker.
type Options struct {
	// Conn is the NATS connection. Required.
	Conn *nats.Conn
	// Config is the loaded worker configuration. Required.
	Config *config.Config
	// Log receives the worker's logs. Default: disabled.
	Log zerolog.Logger
	// Limits bound request sizes. Default wire.DefaultLimits.
	Limits wire.Limits
	// HTTPClient is used by provider adapters. Default: a new client.
	HTTPClient *http.Client
	// Clock drives provider retries. Default: the wall clock.
	Clock provider.Clock
	// Probe, when set, is called at each of the turn.ProbePoints a
	// delivery passes: crash tests stop the process there.
	Probe func(point string)
	// NewAdapter, when set, builds every configured provider's adapter in
	// place of its wire API's own, and no API key is read: `turnstream
	// replay` serves recorded provider calls this way. Default nil.
	NewAdapter AdapterFunc
	// Metrics, when set, counts the worker's turns, deliveries, provider
	// calls and publish acks (internal/metrics). Default nil: none.
	Metrics *metrics.Set
	// TracerProvider, when set, traces each delivery, step, provider
	// attempt and tool call (internal/tracing), and carries the trace
	// context to tool workers in the calls' headers. Default nil: none.
	TracerProvider trace.TracerProvider
}

// AdapterFunc builds the adapter of a configured provider.
type AdapterFunc func(p config.Provider) (provider.Adapter, error)

// Worker runs turns pulled from the submit stream.
type Worker struct {
	nc       *nats.Conn
	js       jetstream.JetStream
	cfg      *config.Config
	log      zerolog.Logger
	limits   wire.Limits
	subjects wire.Subjects
	topology bus.Topology
	bus      *bus.Bus
	state    *bus.State
	loop     *turn.Loop
	turns    *turn.Lifecycle
	cancels  cancels
	// storing bounds the cancels being stored at once (storeCancel), so a
	// flood of cancels never holds the cancel subscription's callback.
	storing chan struct{}
	// decodeSlots bound how many large requests decode at once (one per
	// CPU): decoding is CPU-bound, and its memory is what a burst of
	// hostile requests would multiply.
	decodeSlots chan struct{}
	// decodeGate lets a suspect request decode alone (see intake).
	decodeGate sync.RWMutex
	// instance names this worker process in intake guards and leases.
	instance string
	inflight sync.WaitGroup
	parking  *parking
	// beats keeps the running deliveries alive.
	beats *heartbeats
	// stopping is closed when Run stops fetching: parked deliveries are
	// handed back at once.
	stopping chan struct{}
	// metrics counts deliveries (nil: not counted).
	metrics *metrics.Set
	// ready is why Run cannot take turns now (Ready).
	ready readiness
	// held counts the deliveries being handled (InFlight).
	held atomic.Int64
}

// AsyncWindow is the number of unacknowledged publishes a worker running
// concurrency turns allows on its connection (bus.AckOptions.Window): 64
// per turn (a step's chunks, raw frames and events, acked once per step),
// at least bus.DefaultAckWindow and at most 65536 (each holds an entry,
// and its reply while it is buffered, until its ack).
func AsyncWindow(concurrency int) int {
	return min(max(64*concurrency, 4096), 65536)
}

// New validates options and connects the worker's parts; it creates the
// topology (idempotently) so a fresh server is ready.
func New(ctx context.Context, o Options) (*Worker, error) {
	if o.Conn == nil || o.Config == nil {
		return nil, errors.New("worker: a NATS connection and a config are required")
	}
	// The turns' records are counted by the bus's ack tracker (TrackAcks
	// below); nats.go's asynchronous publisher is left the lease's fence
	// markers, four per take, under the same bounds. An ack that never
	// comes (no disconnect, a leader election) must not hang a flush: it
	// fails after bus.StallWait and the turn is resumed. The window of
	// unacknowledged publishes grows with the turns in flight; a full one
	// makes publishes wait (bus.StallWait), never fail.
	window := AsyncWindow(o.Config.Worker.Concurrency)
	js, err := jetstream.New(o.Conn, jetstream.WithPublishAsyncTimeout(bus.StallWait),
		jetstream.WithPublishAsyncMaxPending(window))
	if err != nil {
		return nil, fmt.Errorf("worker: jetstream: %w", err)
	}
	cfg := o.Config
	topo, err := bus.EnsureTopology(ctx, js, cfg.Topology(), o.Log)
	if err != nil {
		return nil, err
	}
	subjects := topo.Subjects
	b, err := topo.Open(ctx, js, o.Log)
	if err != nil {
		return nil, err
	}
	acks := bus.AckOptions{Window: window, Timeout: bus.StallWait}
	if o.Metrics != nil {
		acks.Acked = o.Metrics.PublishAcked
	}
	if err := b.TrackAcks(acks); err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	state, err := b.State(ctx)
	if err != nil {
		return nil, err
	}
	callKey, err := CallTokenKey(ctx, state, o.Log)
	if err != nil {
		return nil, err
	}
	registry, routes, err := buildRegistry(cfg, o.HTTPClient, o.NewAdapter)
	if err != nil {
		return nil, err
	}
	schemas, err := turn.NewSchemaCache(turn.SchemaOptions{})
	if err != nil {
		return nil, err
	}
	w := &Worker{
		nc: o.Conn, js: js, cfg: cfg, log: o.Log, limits: o.Limits,
		subjects: subjects, topology: topo, bus: b, state: state,
		decodeSlots: make(chan struct{}, runtime.GOMAXPROCS(0)),
		instance:    nuid.Next(),
		parking:     newParking(maxParkedPerSlot * cfg.Worker.Concurrency),
		stopping:    make(chan struct{}),
		storing:     make(chan struct{}, cancelStorers),
		beats:       newHeartbeats(topo.WorkerConsumerConfig().AckWait / 3),
		metrics:     o.Metrics,
	}
	w.ready.set(errStarting)
	var exec turn.Executor = &provider.Executor{Registry: registry, Clock: o.Clock, Limits: provider.Limits(cfg.Limits.Response)}
	if o.Metrics != nil {
		exec = o.Metrics.Executor(exec)
	}
	var tracer trace.Tracer
	if o.TracerProvider != nil {
		tracer = tracing.Tracer(o.TracerProvider)
		exec = tracing.NewExecutor(tracer, exec, systems(cfg))
	}
	w.loop = &turn.Loop{
		Exec:    exec,
		Routes:  routes,
		Budgets: cfg.Budgets,
		State:   state,
		History: turn.HistoryOptions{
			SummaryRoute: cfg.History.SummaryRoute,
			EchoCap:      cfg.History.EchoCap,
			Reserve:      cfg.History.Reserve,
		},
		ToolTimeout: cfg.Worker.ToolTimeout.D(),
		CallKey:     callKey,
		Schemas:     schemas,
		Results: turn.ResultOptions{
			MaxBytes:        cfg.Limits.ToolResult.MaxBytes,
			KeepCredentials: !cfg.Limits.ToolResult.Redacts(),
		},
		Log:    o.Log,
		Probe:  o.Probe,
		Tracer: tracer,
	}
	w.turns = &turn.Lifecycle{
		Loop:          w.loop,
		Sessions:      &sessions{bus: b, state: state, instance: w.instance},
		MaxDeliveries: cfg.Worker.MaxDeliver,
		Log:           o.Log,
	}
	return w, nil
}

// Run pulls and runs turns until ctx is done, then drains: it stops
// fetching, gives running turns the configured drain timeout to finish, and
// hands the rest back (nak) so another worker resumes them. It returns nil
// after a clean drain.
func (w *Worker) Run(ctx context.Context) error {
	cons, err := w.js.Consumer(ctx, wire.StreamSubmit, bus.WorkerConsumer)
	if err != nil {
		return fmt.Errorf("worker: consumer: %w", err)
	}
	defer w.ready.set(errDraining)
	// Cancels are stored while the worker drains too: another worker
	// honors them.
	cancelCtx := context.WithoutCancel(ctx)
	sub, err := w.nc.Subscribe(w.subjects.Cancel("*"), func(m *nats.Msg) { w.handleCancel(cancelCtx, m) })
	if err != nil {
		return fmt.Errorf("worker: cancel subscription: %w", err)
	}
	defer w.cancelsStored()
	defer sub.Unsubscribe() //nolint:errcheck // the connection may be closing

	// Running deliveries are kept alive until the last one is settled.
	beatCtx, stopBeats := context.WithCancel(context.Background())
	beatsDone := make(chan struct{})
	go func() { defer close(beatsDone); w.beats.run(beatCtx) }()
	defer func() { stopBeats(); <-beatsDone }()

	// turnCtx outlives ctx by the drain timeout: running turns may finish.
	turnCtx, stopTurns := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stopTurns(nil)

	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	w.inflight.Go(func() { w.watchLeases(watchCtx) })

	slots := make(chan struct{}, w.cfg.Worker.Concurrency)
	w.ready.set(nil)
	w.log.Info().Int("concurrency", cap(slots)).Msg("worker started")
	for ctx.Err() == nil {
		// Wait for at least one free slot, then take all free ones.
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		n := 1
	fill:
		for n < cap(slots) {
			select {
			case slots <- struct{}{}:
				n++
			default:
				break fill
			}
		}
		fetchCtx, cancelFetch := context.WithTimeout(ctx, time.Second)
		batch, err := cons.Fetch(n, jetstream.FetchContext(fetchCtx))
		if err != nil {
			cancelFetch()
			for range n {
				<-slots
			}
			if ctx.Err() == nil {
				w.ready.set(fmt.Errorf("worker: fetch failed: %w", err))
				w.log.Warn().Err(err).Msg("fetch failed")
				sleep(ctx, 200*time.Millisecond)
			}
			continue
		}
		got := 0
		for msg := range batch.Messages() {
			got++
			w.inflight.Add(1)
			w.held.Add(1)
			go func() {
				defer w.inflight.Done()
				defer w.held.Add(-1)
				s := &slot{ch: slots, held: true}
				defer s.release()
				w.handle(turnCtx, msg, s)
			}()
		}
		cancelFetch()
		for range n - got {
			<-slots
		}
		if err := batch.Error(); err != nil && ctx.Err() == nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
			w.ready.set(fmt.Errorf("worker: fetch failed: %w", err))
			w.log.Warn().Err(err).Msg("fetch ended with error")
		} else if ctx.Err() == nil {
			w.ready.set(nil)
		}
	}
	w.ready.set(errDraining)
	close(w.stopping)
	w.log.Info().Dur("drain_timeout", w.cfg.Worker.DrainTimeout.D()).Msg("worker draining (a second signal exits at once)")
	done := make(chan struct{})
	go func() { w.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(w.cfg.Worker.DrainTimeout.D()):
		stopTurns(turn.ErrShutdown)
		<-done
	}
	w.log.Info().Msg("worker stopped")
	return nil
}

// systems names each configured provider's GenAI system, its API's, for
// the attempts' spans.
func systems(cfg *config.Config) func(provider string) string {
	m := make(map[string]string, len(cfg.Providers))
	for _, p := range cfg.Providers {
		if api, ok := apis.Lookup(string(p.API)); ok {
			m[p.Name] = api.System
		}
	}
	return func(provider string) string { return m[provider] }
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

package toolworker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/turnstream/turnstream/pkg/wire"
)

// Serve serves the tools of handlers, keyed by tool name, until ctx is done.
//
// For each tool it waits until the TURN_CLAIMS bucket and the tool's
// durable consumer "tool-<name>" on TURN_TOOLS exist (the turnstream
// workers create the bucket when they start and the consumer before they
// dispatch the tool's first call; Serve creates and changes neither), binds
// to the consumer, whose AckWait (worker config worker.tool_ack_wait) paces
// its heartbeats, and fetches calls, at most WithConcurrency of them in
// flight. Each valid call is claimed in TURN_CLAIMS, then runs its Handler
// under the call's deadline; its result, carrying the call's token, is
// recorded in the claim, published on the session's result subject, in
// the call's encoding, with the Nats-Msg-Id
// "result:<base64url(sha256(token))>", and the call is acked only
// after the result is stored. A redelivered call whose claim holds a
// result is answered with it and never run again; one whose claimer died
// runs again only for a tool named by WithIdempotent, and otherwise gets
// the error result OutcomeUnknownContent, flagged synthesized. Invalid
// calls, calls whose deadline has passed and calls whose handler outran the
// deadline are terminated without a result: the turn worker has written a
// timeout result for them.
//
// Unless WithDiscovery(false) is given, Serve also registers the process
// as the turnstream-tools NATS service (nats.go/micro) on js's connection
// for as long as it runs; a registration that fails is logged and Serve
// serves anyway.
//
// When ctx is done Serve stops fetching, lets in-flight handlers finish for
// up to WithDrainTimeout, then cancels their contexts, waits for them to
// return and returns nil. A call cut short this way may have taken effect:
// an idempotent tool's call is handed back to run again; any other gets the
// "tool outcome unknown" result. Serve returns an error at once for invalid
// options or handlers, and after draining for a fatal failure: a closed
// NATS connection, or a consumer the server rejects.
func Serve(ctx context.Context, js jetstream.JetStream, handlers map[string]Handler, opts ...Option) error {
	o := defaultOptions()
	for _, opt := range opts {
		if opt == nil {
			return fmt.Errorf("%w: nil option", ErrInvalidOption)
		}
		if err := opt(&o); err != nil {
			return err
		}
	}
	if err := checkHandlers(handlers); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(o.idempotent)) {
		if handlers[name] == nil {
			return fmt.Errorf("%w: idempotent tool %q has no handler", ErrInvalidOption, name)
		}
	}
	if js == nil {
		return errors.New("toolworker: nil JetStream")
	}

	// stopCtx ends fetching; runCtx bounds the calls already taken and is
	// cancelled only when the drain timeout expires.
	stopCtx, stop := context.WithCancel(ctx)
	defer stop()
	runCtx, abort := context.WithCancel(context.WithoutCancel(ctx))
	defer abort()

	var (
		loops    sync.WaitGroup // one fetch loop per tool
		inflight sync.WaitGroup // one goroutine per call being handled
		mu       sync.Mutex
		fatal    error
	)
	fail := func(err error) {
		mu.Lock()
		if fatal == nil {
			fatal = err
		}
		mu.Unlock()
		stop()
	}
	// A closed connection never comes back: stop at once instead of
	// waiting for a pull request to miss its heartbeats.
	nc := js.Conn()
	closed := nc.StatusChanged(nats.CLOSED)
	defer nc.RemoveStatusListener(closed)
	if nc.IsClosed() {
		fail(fmt.Errorf("toolworker: %w", nats.ErrConnectionClosed))
	}

	// owner names this Serve in the claims it writes.
	owner := nuid.Next()
	defer o.register(nc, handlers, owner)() // the turnstream-tools service (WithDiscovery)
	for _, name := range slices.Sorted(maps.Keys(handlers)) {
		t := &tool{
			name:       name,
			handler:    handlers[name],
			idempotent: o.idempotent[name],
			js:         js,
			subjects:   o.subjects,
			owner:      owner,
			log:        o.logger.With().Str("tool", name).Logger(),
			slots:      make(chan struct{}, o.concurrency),
			inflight:   &inflight,
			obs:        o.observers,
			tracer:     o.tracer,
			traced:     o.traced,
		}
		loops.Go(func() {
			if err := t.serve(stopCtx, runCtx); err != nil {
				fail(err)
			}
		})
	}

	select {
	case <-stopCtx.Done():
	case <-closed:
		fail(fmt.Errorf("toolworker: %w", nats.ErrConnectionClosed))
	}
	loops.Wait() // no call is taken after this

	drained := make(chan struct{})
	go func() {
		inflight.Wait()
		close(drained)
	}()
	timer := time.NewTimer(o.drainTimeout)
	defer timer.Stop()
	select {
	case <-drained:
	case <-timer.C:
		o.logger.Warn().Dur("drain_timeout", o.drainTimeout).Msg("drain timeout expired; cancelling in-flight calls")
		abort()
		<-drained
	}
	o.logger.Debug().Msg("tool worker stopped")
	return fatal
}

func checkHandlers(handlers map[string]Handler) error {
	if len(handlers) == 0 {
		return fmt.Errorf("%w: no handlers", ErrInvalidHandlers)
	}
	for name, h := range handlers {
		if !wire.ValidToolName(name) {
			return fmt.Errorf("%w: tool name %q must be 1-64 characters of [A-Za-z0-9_-]", ErrInvalidHandlers, name)
		}
		if h == nil {
			return fmt.Errorf("%w: nil handler for tool %q", ErrInvalidHandlers, name)
		}
	}
	return nil
}

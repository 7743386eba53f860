package toolworker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/pkg/wire"
)

const (
	// retryDelay spaces the attempts to record a result and to bind again
	// after fetching failed.
	retryDelay = 500 * time.Millisecond
	// bindFirstDelay and bindMaxDelay bound the backoff of bind's polls
	// for the claims bucket and the tool's consumer.
	bindFirstDelay = 50 * time.Millisecond
	bindMaxDelay   = time.Second
	// fetchWait bounds one pull request; fetchHeartbeat makes a pull the
	// server lost (a leader change, a restarted node) fail after two
	// missed heartbeats instead of at fetchWait.
	fetchWait      = 5 * time.Second
	fetchHeartbeat = time.Second
)

// tool serves one tool: its consumer, its fetch loop and its calls.
type tool struct {
	name    string
	handler Handler
	// idempotent: a call whose claimer died may run again.
	idempotent bool
	js         jetstream.JetStream
	subjects   wire.Subjects
	// owner names this Serve in its claims.
	owner string
	log   zerolog.Logger
	// slots holds one token per call in flight (or reserved by a fetch).
	slots chan struct{}
	// inflight is Serve's group of call goroutines.
	inflight *sync.WaitGroup
	// obs sees the binding's states and the calls' outcomes.
	obs observers
	// tracer traces each delivered call; traced when a tracer provider
	// was given (else the calls' trace context is not read).
	tracer trace.Tracer
	traced bool
}

// serve binds the tool's consumer and fetches calls until ctx is done,
// binding again after any failure. It returns nil when ctx is done and an
// error only when retrying cannot help.
func (t *tool) serve(ctx, runCtx context.Context) error {
	for {
		b, err := t.bind(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		t.log.Info().Dur("ack_wait", b.ackWait).Int("concurrency", cap(t.slots)).Bool("idempotent", t.idempotent).Msg("serving tool")

		err = t.consume(ctx, runCtx, b)
		if ctx.Err() != nil {
			return nil
		}
		t.obs.ToolState(t.name, ToolUnbound)
		if isFatal(t.js, err) {
			return fmt.Errorf("toolworker: tool %s: %w", t.name, err)
		}
		t.log.Warn().Err(err).Msg("fetching calls failed; binding the consumer again")
		if !sleep(ctx, retryDelay) {
			return nil
		}
	}
}

// binding is what the calls fetched from one bound consumer are handled
// with.
type binding struct {
	cons jetstream.Consumer
	// claims is the TURN_CLAIMS bucket.
	claims jetstream.KeyValue
	// ackWait is the consumer's, as the server reported it when binding:
	// heartbeats are paced by it.
	ackWait time.Duration
}

// bind waits until the TURN_CLAIMS bucket and the tool's durable consumer
// exist, polling with a backoff from bindFirstDelay to bindMaxDelay until
// ctx is done. It creates neither: the turnstream workers create the
// bucket when they start and the consumer before they dispatch the tool's
// first call, so a tool worker that starts first waits for that call.
func (t *tool) bind(ctx context.Context) (binding, error) {
	var waited string // what bind last logged it waits for
	delay := bindFirstDelay
	for {
		b, err := t.bindOnce(ctx)
		if err == nil {
			if waited != "" {
				t.log.Info().Str("consumer", bus.ToolConsumer(t.name)).Msg("tool consumer bound")
			}
			t.obs.ToolState(t.name, ToolBound)
			return b, nil
		}
		if ctx.Err() != nil {
			return binding{}, ctx.Err()
		}
		if isFatal(t.js, err) {
			return binding{}, fmt.Errorf("toolworker: tool %s: %w", t.name, err)
		}
		var what string
		switch {
		case errors.Is(err, jetstream.ErrBucketNotFound):
			what = "bucket"
		case errors.Is(err, jetstream.ErrConsumerNotFound), errors.Is(err, jetstream.ErrStreamNotFound):
			what = "consumer"
		default:
			what = "error"
		}
		if what != waited {
			// Once per thing waited for; a failure at every poll goes to
			// debug after its first warning.
			state := ToolUnbound
			if what == "consumer" {
				state = ToolWaiting
			}
			t.obs.ToolState(t.name, state)
			switch what {
			case "bucket":
				t.log.Info().Str("bucket", bus.ClaimsBucket).Msg("waiting for the claims bucket; the turnstream workers create it when they start")
			case "consumer":
				t.log.Info().Str("consumer", bus.ToolConsumer(t.name)).Str("stream", wire.StreamTools).
					Msg("waiting for the tool consumer; the turnstream workers create it at the tool's first call")
			default:
				t.log.Warn().Err(err).Msg("binding the tool consumer failed; retrying")
			}
			waited = what
		} else if what == "error" {
			t.log.Debug().Err(err).Msg("binding the tool consumer failed; retrying")
		}
		if !sleep(ctx, delay) {
			return binding{}, ctx.Err()
		}
		delay = min(2*delay, bindMaxDelay)
	}
}

// bindOnce makes one attempt at what bind does: it opens the claims bucket
// and reads the tool consumer's info (CONSUMER.INFO), whose AckWait paces
// the heartbeats.
func (t *tool) bindOnce(ctx context.Context) (binding, error) {
	kv, err := t.js.KeyValue(ctx, bus.ClaimsBucket)
	if err != nil {
		return binding{}, err
	}
	cons, err := t.js.Consumer(ctx, wire.StreamTools, bus.ToolConsumer(t.name))
	if err != nil {
		return binding{}, err
	}
	ackWait := cons.CachedInfo().Config.AckWait
	if ackWait <= 0 {
		ackWait = bus.DefaultToolAckWait
	}
	return binding{cons: cons, claims: kv, ackWait: ackWait}, nil
}

// consume fetches calls in batches sized to the free slots, so no call
// waits in a client buffer while its ack timer runs, and hands each to a
// goroutine in t.inflight. It returns ctx's error when ctx is done, or the
// failure of a fetch.
func (t *tool) consume(ctx, runCtx context.Context, b binding) error {
	for {
		n, err := t.acquire(ctx)
		if err != nil {
			return err
		}
		if err := t.fetch(ctx, runCtx, b, n); err != nil {
			return err
		}
	}
}

func (t *tool) fetch(ctx, runCtx context.Context, b binding, n int) error {
	fctx, cancel := context.WithTimeout(ctx, fetchWait)
	defer cancel()
	batch, err := b.cons.Fetch(n, jetstream.FetchContext(fctx), jetstream.FetchHeartbeat(fetchHeartbeat))
	if err != nil {
		t.release(n)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	used := 0
	for m := range batch.Messages() {
		used++
		if ctx.Err() != nil {
			// Stopping: hand the call back now rather than after AckWait.
			if err := m.Nak(); err != nil {
				t.log.Warn().Err(err).Msg("handing back a call failed")
			}
			t.release(1)
			continue
		}
		t.inflight.Go(func() {
			defer t.release(1)
			t.handle(runCtx, m, b)
		})
	}
	t.release(n - used)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err := batch.Error(); err != nil && fctx.Err() == nil {
		return err
	}
	return nil
}

// acquire blocks until a slot is free and then takes every free slot.
func (t *tool) acquire(ctx context.Context) (int, error) {
	select {
	case t.slots <- struct{}{}:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	n := 1
	for n < cap(t.slots) {
		select {
		case t.slots <- struct{}{}:
			n++
		default:
			return n, nil
		}
	}
	return n, nil
}

func (t *tool) release(n int) {
	for range n {
		<-t.slots
	}
}

// isFatal reports whether retrying err cannot help: the connection is
// closed for good, or the server rejected the request as invalid (a
// consumer that conflicts with the stream's configuration).
func isFatal(js jetstream.JetStream, err error) bool {
	if err == nil {
		return false
	}
	if js.Conn().IsClosed() || errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, jetstream.ErrConnectionClosed) {
		return true
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.Code == 400
}

// sleep waits d or until ctx is done; it reports whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

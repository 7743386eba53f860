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

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/pkg/wire"
)

const (
	// retryDelay spaces the attempts to find the stream and bind the consumer.
	retryDelay = 500 * time.Millisecond
	// fetchWait bounds one pull request.
	fetchWait = 30 * time.Second
	// defaultAckWait is assumed if the consumer reports none.
	defaultAckWait = 30 * time.Second
)

// tool serves one tool: its consumer, its fetch loop and its calls.
type tool struct {
	name     string
	handler  Handler
	js       jetstream.JetStream
	subjects wire.Subjects
	log      zerolog.Logger
	// slots holds one token per call in flight (or reserved by a fetch).
	slots chan struct{}
	// inflight is Serve's group of call goroutines.
	inflight *sync.WaitGroup
}

// serve binds the tool's consumer and fetches calls until ctx is done,
// binding again after any failure. It returns nil when ctx is done and an
// error only when retrying cannot help.
func (t *tool) serve(ctx, runCtx context.Context) error {
	for {
		cons, err := t.bind(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		ackWait := cons.CachedInfo().Config.AckWait
		if ackWait <= 0 {
			ackWait = defaultAckWait
		}
		t.log.Info().Dur("ack_wait", ackWait).Int("concurrency", cap(t.slots)).Msg("serving tool")

		err = t.consume(ctx, runCtx, cons, max(ackWait/3, time.Millisecond))
		if ctx.Err() != nil {
			return nil
		}
		if isFatal(t.js, err) {
			return fmt.Errorf("toolworker: tool %s: %w", t.name, err)
		}
		t.log.Warn().Err(err).Msg("fetching calls failed; binding the consumer again")
		if !sleep(ctx, retryDelay) {
			return nil
		}
	}
}

// bind waits for the TURN_TOOLS stream and creates or updates the tool's
// durable consumer, retrying every retryDelay until ctx is done.
func (t *tool) bind(ctx context.Context) (jetstream.Consumer, error) {
	topo := bus.Topology{Subjects: t.subjects}
	missed := false
	for {
		_, err := t.js.Stream(ctx, wire.StreamTools)
		if err == nil {
			var cons jetstream.Consumer
			if cons, err = topo.EnsureToolConsumer(ctx, t.js, t.name); err == nil {
				if missed {
					t.log.Info().Msg("tool consumer bound")
				}
				return cons, nil
			}
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if isFatal(t.js, err) {
			return nil, fmt.Errorf("toolworker: tool %s: %w", t.name, err)
		}
		ev := t.log.Debug()
		if !missed {
			ev = t.log.Warn()
		}
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			ev.Str("stream", wire.StreamTools).Msg("waiting for the tool stream; the turnstream workers create it")
		} else {
			ev.Err(err).Msg("binding the tool consumer failed; retrying")
		}
		missed = true
		if !sleep(ctx, retryDelay) {
			return nil, ctx.Err()
		}
	}
}

// consume fetches calls in batches sized to the free slots, so no call
// waits in a client buffer while its ack timer runs, and hands each to a
// goroutine in t.inflight. It returns ctx's error when ctx is done, or the
// failure of a fetch.
func (t *tool) consume(ctx, runCtx context.Context, cons jetstream.Consumer, heartbeat time.Duration) error {
	for {
		n, err := t.acquire(ctx)
		if err != nil {
			return err
		}
		if err := t.fetch(ctx, runCtx, cons, n, heartbeat); err != nil {
			return err
		}
	}
}

func (t *tool) fetch(ctx, runCtx context.Context, cons jetstream.Consumer, n int, heartbeat time.Duration) error {
	fctx, cancel := context.WithTimeout(ctx, fetchWait)
	defer cancel()
	batch, err := cons.Fetch(n, jetstream.FetchContext(fctx))
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
			t.handle(runCtx, m, heartbeat)
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

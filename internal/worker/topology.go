package worker

import (
	"context"
	"errors"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/calltoken"
	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/pkg/wire"
)

// Topology is the JetStream topology a worker configured by cfg uses: the
// one place it is derived from the config (the worker and `turnstream
// streams` both ensure it). Replicas 0 is resolved against the server by
// EnsureTopology.
func Topology(cfg *config.Config) bus.Topology {
	return bus.Topology{
		Subjects:    wire.Subjects{Prefix: cfg.NATS.Prefix},
		Replicas:    cfg.NATS.Replicas,
		AckWait:     cfg.Worker.AckWait.D(),
		ToolAckWait: cfg.Worker.ToolAckWait.D(),
		ToolTimeout: cfg.Worker.ToolTimeout.D(),
	}
}

// EnsureTopology creates or updates cfg's topology, retrying with backoff
// until ctx ends while the servers are not ready (a cluster electing its
// leaders, a node restarting): a worker started with its servers waits for
// them instead of exiting. Replicas 0 becomes three on a cluster and one
// on a standalone server (bus.ReplicasFor). It returns the topology as
// ensured.
func EnsureTopology(ctx context.Context, js jetstream.JetStream, cfg *config.Config, log zerolog.Logger) (bus.Topology, error) {
	topo := Topology(cfg)
	retry := func(attempt int, err error, next time.Duration) {
		ev := log.Debug()
		if attempt == 1 || attempt%10 == 0 {
			ev = log.Warn()
		}
		ev.Err(err).Int("attempt", attempt).Dur("next", next).Msg("JetStream not ready; retrying")
	}
	if topo.Replicas == 0 {
		b := backoff.WithContext(backoff.NewExponentialBackOff(
			backoff.WithInitialInterval(100*time.Millisecond), backoff.WithMaxInterval(5*time.Second), backoff.WithMaxElapsedTime(0)), ctx)
		attempt := 0
		err := backoff.RetryNotify(func() error {
			attempt++
			actx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			n, err := bus.ReplicasFor(actx, js)
			topo.Replicas = n
			return err
		}, b, func(err error, next time.Duration) { retry(attempt, err, next) })
		if err != nil {
			return topo, err
		}
		log.Info().Int("replicas", topo.Replicas).Msg("stream replicas chosen for the server")
	}
	return topo, bus.EnsureRetry(ctx, js, topo, retry)
}

// CallTokenKey reads the fleet key the worker signs and verifies call
// tokens with (bus.State.CallTokenKey; the first worker creates it),
// retrying with backoff until ctx ends while the servers do not answer. A
// stored value that is not a key is an error at once: an operator must
// remove it (every worker then has to restart, to share the new key).
func CallTokenKey(ctx context.Context, state *bus.State, log zerolog.Logger) (calltoken.Key, error) {
	b := backoff.WithContext(backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(100*time.Millisecond), backoff.WithMaxInterval(5*time.Second), backoff.WithMaxElapsedTime(0)), ctx)
	var key calltoken.Key
	attempt := 0
	err := backoff.RetryNotify(func() error {
		attempt++
		k, err := state.CallTokenKey(ctx)
		if errors.Is(err, calltoken.ErrBadKey) {
			return backoff.Permanent(err)
		}
		key = k
		return err
	}, b, func(err error, next time.Duration) {
		ev := log.Debug()
		if attempt == 1 || attempt%10 == 0 {
			ev = log.Warn()
		}
		ev.Err(err).Int("attempt", attempt).Dur("next", next).Msg("call-token key not read; retrying")
	})
	return key, err
}

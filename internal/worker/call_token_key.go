package worker

import (
	"context"
	"errors"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/calltoken"
)

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

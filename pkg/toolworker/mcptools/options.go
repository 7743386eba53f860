package mcptools

import (
	"fmt"
	"io"
	"time"

	"github.com/rs/zerolog"
)

// minContentBytes is the least WithMaxContentBytes accepts: room for the
// truncation marker and some content.
const minContentBytes = 1024

// Option configures Start. An invalid value makes Start return an error
// wrapping ErrInvalidOption.
type Option func(*options) error

type options struct {
	// logger receives operational logs. Default: a disabled logger.
	logger zerolog.Logger
	// reserved are tool names served by others: an MCP tool of that name
	// is refused. Default: none.
	reserved map[string]bool
	// stderr receives the stdio servers' standard error. Default: discarded.
	stderr io.Writer
	// maxContentBytes bounds a result's content before it is handed to
	// toolworker, which cuts it further to the server's max payload.
	// Default 1 MiB.
	maxContentBytes int
	// startTimeout bounds a server's start: spawning or connecting, the
	// initialize handshake and, at the first start, the tool list.
	// Default 30s.
	startTimeout time.Duration
	// restartFirst and restartMax bound the delay before a restart,
	// doubling from the first to the max. Default 100ms and 30s.
	restartFirst, restartMax time.Duration
}

func defaultOptions() options {
	return options{
		logger:          zerolog.Nop(),
		reserved:        map[string]bool{},
		maxContentBytes: 1 << 20,
		startTimeout:    30 * time.Second,
		restartFirst:    100 * time.Millisecond,
		restartMax:      30 * time.Second,
	}
}

// WithLogger sets the logger. Start logs servers, tools, refusals,
// failures and restarts, never arguments or results. Default: nothing is
// logged.
func WithLogger(l zerolog.Logger) Option {
	return func(o *options) error {
		o.logger = l
		return nil
	}
}

// WithReserved names tools served by other handlers of the same Serve (the
// demo tools, say): an MCP tool that would take one of these names is
// refused like one that collides with another server's. Default: none.
func WithReserved(names ...string) Option {
	return func(o *options) error {
		for _, n := range names {
			o.reserved[n] = true
		}
		return nil
	}
}

// WithStderr sends the standard error of the stdio servers to w (shared
// by all of them; writes may interleave). Default: discarded.
func WithStderr(w io.Writer) Option {
	return func(o *options) error {
		o.stderr = w
		return nil
	}
}

// WithMaxContentBytes bounds the content of a result built from an MCP
// tool's answer: a longer one is cut with wire.TruncateContent's marker,
// which tells the model how many bytes the tool returned. toolworker then
// cuts it further if it exceeds the NATS server's max payload. At least
// 1024. Default 1 MiB (NATS's default max payload).
func WithMaxContentBytes(n int) Option {
	return func(o *options) error {
		if n < minContentBytes {
			return fmt.Errorf("%w: max content bytes must be at least %d, got %d", ErrInvalidOption, minContentBytes, n)
		}
		o.maxContentBytes = n
		return nil
	}
}

// WithStartTimeout bounds each start of a server: spawning the command or
// reaching the URL, the initialize handshake and, at the first start, the
// tool list. Default 30s.
func WithStartTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("%w: start timeout must be positive, got %s", ErrInvalidOption, d)
		}
		o.startTimeout = d
		return nil
	}
}

// WithRestartBackoff bounds the delay before restarting a server that
// stopped: first, doubling at each failed restart up to max (with
// jitter), and back to first once a server has run for a minute. Default
// 100ms and 30s.
func WithRestartBackoff(first, max time.Duration) Option {
	return func(o *options) error {
		if first <= 0 || max < first {
			return fmt.Errorf("%w: restart backoff needs 0 < first <= max, got %s and %s", ErrInvalidOption, first, max)
		}
		o.restartFirst, o.restartMax = first, max
		return nil
	}
}

package toolworker

import (
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/turnstream/turnstream/internal/tracing"
	"github.com/turnstream/turnstream/pkg/wire"
)

// Option configures Serve. An invalid value makes Serve return an error
// wrapping ErrInvalidOption.
type Option func(*options) error

type options struct {
	// subjects names the tool and result subjects. Default prefix wire.DefaultPrefix.
	subjects wire.Subjects
	// concurrency caps concurrent handler runs per tool. Default 16.
	concurrency int
	// logger receives operational logs. Default: a disabled logger.
	logger zerolog.Logger
	// drainTimeout bounds how long Serve waits for in-flight handlers after
	// its context is done. Default 10s.
	drainTimeout time.Duration
	// idempotent names the tools that may run again when their claimer
	// died. Default: none.
	idempotent map[string]bool
	// observers see tool states and call outcomes. Default: none.
	observers observers
	// tracer traces each delivered call; traced when WithTracerProvider
	// was given. Default: a no-op tracer.
	tracer trace.Tracer
	traced bool
	// service configures the turnstream-tools NATS service
	// (WithDiscovery, WithVersion). Default: registered.
	service serviceOptions
}

func defaultOptions() options {
	return options{
		subjects:     wire.Subjects{Prefix: wire.DefaultPrefix},
		concurrency:  16,
		logger:       zerolog.Nop(),
		drainTimeout: 10 * time.Second,
		idempotent:   map[string]bool{},
		tracer:       tracing.Tracer(nil),
	}
}

// WithPrefix sets the first token(s) of every subject, as configured on the
// turnstream workers. Default wire.DefaultPrefix ("turn"). A prefix is one or
// more dot-separated tokens of [A-Za-z0-9_-].
func WithPrefix(prefix string) Option {
	return func(o *options) error {
		if prefix == "" {
			return fmt.Errorf("%w: empty prefix", ErrInvalidOption)
		}
		for _, tok := range strings.Split(prefix, ".") {
			if !wire.ValidToken(tok) {
				return fmt.Errorf("%w: prefix %q: tokens must be 1-128 characters of [A-Za-z0-9_-]", ErrInvalidOption, prefix)
			}
		}
		o.subjects = wire.Subjects{Prefix: prefix}
		return nil
	}
}

// WithConcurrency caps the handler runs in flight per tool. Calls beyond it
// stay in the work queue (they are not fetched) until a run ends. Default 16.
func WithConcurrency(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("%w: concurrency must be at least 1, got %d", ErrInvalidOption, n)
		}
		o.concurrency = n
		return nil
	}
}

// WithLogger sets the logger. Serve logs call identifiers and outcomes, never
// arguments or results. Default: nothing is logged.
func WithLogger(l zerolog.Logger) Option {
	return func(o *options) error {
		o.logger = l
		return nil
	}
}

// WithDrainTimeout bounds how long Serve lets in-flight handlers run after
// its context is done. When it expires their contexts are cancelled and
// their calls are handed back for redelivery. Default 10s.
func WithDrainTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("%w: drain timeout must be positive, got %s", ErrInvalidOption, d)
		}
		o.drainTimeout = d
		return nil
	}
}

// WithIdempotent declares tools whose calls may run more than once with the
// same effect as once (a lookup, a read, an upsert keyed by the call). A
// call whose tool worker died while running it (or stopped long enough to
// lose its claim) runs again on another tool worker if its tool is
// idempotent; otherwise it is never run again, and the turn gets the
// explicit error result OutcomeUnknownContent, flagged synthesized. A
// redelivered call whose claimer finished is answered from the recorded
// result either way. Default: no tool is idempotent. Each name must be a
// tool Serve is given handlers for; WithIdempotent may be given more than
// once, and the sets add up.
func WithIdempotent(tools ...string) Option {
	return func(o *options) error {
		if len(tools) == 0 {
			return fmt.Errorf("%w: WithIdempotent needs at least one tool name", ErrInvalidOption)
		}
		for _, name := range tools {
			if !wire.ValidToolName(name) {
				return fmt.Errorf("%w: idempotent tool name %q must be 1-64 characters of [A-Za-z0-9_-]", ErrInvalidOption, name)
			}
			o.idempotent[name] = true
		}
		return nil
	}
}

// WithObserver adds an Observer that sees each tool's consumer binding and
// each call's outcome, for metrics and readiness. WithObserver may be
// given more than once; every observer sees everything. Default: none.
func WithObserver(o Observer) Option {
	return func(opts *options) error {
		if o == nil {
			return fmt.Errorf("%w: nil observer", ErrInvalidOption)
		}
		opts.observers = append(opts.observers, o)
		return nil
	}
}

// WithTracerProvider traces each delivered call as an "execute_tool
// <tool>" span (OpenTelemetry GenAI conventions: the tool's name and the
// call's id, the session and turn, the outcome; never arguments or
// results), a child of the turn worker's span of the call, whose context
// the call's headers carry (W3C traceparent); without it, the headers are
// not read. The handler's context holds
// the span, so the handler's own spans nest under it. Default: no spans.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) error {
		if tp == nil {
			return fmt.Errorf("%w: nil tracer provider", ErrInvalidOption)
		}
		o.tracer, o.traced = tracing.Tracer(tp), true
		return nil
	}
}

package main

import (
	"context"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"
	"go.opentelemetry.io/otel"

	"github.com/turnstream/turnstream/internal/tracing"
)

// addTraceFlag registers --otlp-endpoint, of the commands that run
// workers or tool workers.
func addTraceFlag(f *pflag.FlagSet, endpoint *string) {
	f.StringVar(endpoint, "otlp-endpoint", "", "export OpenTelemetry traces over OTLP/HTTP to this collector: a URL "+
		"(http://collector:4318) or host:port (plain HTTP); also on when "+tracing.EnvEndpoint+" is set (default: off)")
}

// startTracing starts the tracer provider of a command's process. Its
// Shutdown, deferred by the caller, exports what is still batched.
func startTracing(ctx context.Context, endpoint, service string, log zerolog.Logger) (*tracing.Provider, error) {
	p, err := tracing.Start(ctx, tracing.Options{Endpoint: endpoint, Service: service, Version: versionString()})
	if err != nil {
		return nil, err
	}
	if p.On() {
		// The exporter's own errors (a collector unreachable) go to this
		// log, not to the standard library's.
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			log.Warn().Err(err).Msg("exporting traces failed")
		}))
		log.Info().Str("endpoint", p.Endpoint).Str("service", service).Msg("exporting traces")
	}
	return p, nil
}

// stopTracing exports the spans still batched and stops p.
func stopTracing(ctx context.Context, p *tracing.Provider, log zerolog.Logger) {
	if err := p.Shutdown(ctx); err != nil {
		log.Warn().Err(err).Msg("exporting the last traces failed")
	}
}

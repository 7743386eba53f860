package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Instrumentation is the name of turnstream's tracers.
const Instrumentation = "github.com/turnstream/turnstream"

// Tracer is turnstream's tracer of tp; a no-op one when tp is nil.
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return noop.NewTracerProvider().Tracer(Instrumentation)
	}
	return tp.Tracer(Instrumentation)
}

// Environment variables that turn the OTLP exporter on without a flag
// (the OpenTelemetry SDKs' own names); the exporter reads the rest of
// the OTEL_EXPORTER_OTLP_* variables (headers, timeout, TLS) itself.
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	// EnvSampler, when set, chooses the sampler (the SDK reads it).
	EnvSampler = "OTEL_TRACES_SAMPLER"
)

// Options configure a process's tracer provider.
type Options struct {
	// Endpoint is the OTLP/HTTP collector: a URL (http://collector:4318 or
	// https://..., whose path defaults to /v1/traces) or host:port (plain
	// HTTP, as a collector beside the process listens). Empty: the
	// exporter is on only if EnvEndpoint or EnvTracesEndpoint is set, else
	// nothing is traced.
	Endpoint string
	// Service and Version name the process (service.name,
	// service.version), such as "turnstream-worker".
	Service, Version string
}

// Provider is a process's tracer provider and what stops it.
type Provider struct {
	tp *sdktrace.TracerProvider // nil: tracing off
	// Endpoint is where spans go, without credentials ("" when off;
	// "environment" when the OTEL_EXPORTER_OTLP_* variables name it).
	Endpoint string
}

// Start starts the tracer provider o asks for: an OTLP/HTTP exporter
// behind a batching processor, or, with no endpoint anywhere, none (On is
// false, and nothing is traced). Unless OTEL_TRACES_SAMPLER says
// otherwise, every turn is sampled, whether or not the client that
// submitted it sampled its own span: the operator's traces do not depend
// on a client's sampling.
func Start(ctx context.Context, o Options) (*Provider, error) {
	var opts []otlptracehttp.Option
	var shown string // the endpoint as logged: no credentials
	switch endpoint := o.Endpoint; {
	case strings.Contains(endpoint, "://"):
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, errors.New("tracing: --otlp-endpoint: want http(s)://host[:port][/path] or host:port")
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = "/v1/traces"
		}
		opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
		// No user information or query, where credentials hide (as
		// config.PublicURL, which this package cannot import: config
		// imports the bus, which imports tracing).
		shown = u.Scheme + "://" + u.Host + u.Path
	case endpoint != "":
		if strings.ContainsAny(endpoint, "/ @") {
			return nil, errors.New("tracing: --otlp-endpoint: want http(s)://host[:port][/path] or host:port")
		}
		opts = append(opts, otlptracehttp.WithEndpoint(endpoint), otlptracehttp.WithInsecure())
		shown = "http://" + endpoint + "/v1/traces"
	case os.Getenv(EnvEndpoint) != "" || os.Getenv(EnvTracesEndpoint) != "":
		shown = "environment"
	default:
		return &Provider{}, nil
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	attrs := resource.NewSchemaless(semconv.ServiceName(o.Service), semconv.ServiceVersion(o.Version))
	res, err := resource.Merge(resource.Default(), attrs)
	if err != nil {
		res = attrs
	}
	tpOpts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp), sdktrace.WithResource(res)}
	if os.Getenv(EnvSampler) == "" {
		tpOpts = append(tpOpts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample(),
			sdktrace.WithRemoteParentNotSampled(sdktrace.AlwaysSample()))))
	}
	return &Provider{tp: sdktrace.NewTracerProvider(tpOpts...), Endpoint: shown}, nil
}

// TracerProvider is what the process traces with: nil when tracing is
// off, so nothing is wrapped or started. Nil-safe.
func (p *Provider) TracerProvider() trace.TracerProvider {
	if !p.On() {
		return nil
	}
	return p.tp
}

// On says whether spans are exported.
func (p *Provider) On() bool { return p != nil && p.tp != nil }

// ShutdownTimeout bounds how long Shutdown exports the spans still
// batched.
const ShutdownTimeout = 5 * time.Second

// Shutdown exports the spans still batched, within ShutdownTimeout, and
// stops the provider. Nil-safe; a no-op when tracing is off.
func (p *Provider) Shutdown(ctx context.Context) error {
	if !p.On() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	if err := p.tp.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("tracing: shutdown: %w", err)
	}
	return nil
}

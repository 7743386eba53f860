package tracing_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/turnstream/turnstream/internal/tracing"
)

// TestHeadersCarryTraceContext: a span's context goes into a NATS header
// as W3C lowercase traceparent, and comes back out as the remote parent;
// without a span nothing is written.
func TestHeadersCarryTraceContext(t *testing.T) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
	ctx, span := tp.Tracer("t").Start(context.Background(), "s")
	defer span.End()

	h := nats.Header{}
	tracing.Inject(ctx, h)
	v := h.Get(tracing.HeaderTraceparent)
	if !strings.HasPrefix(v, "00-"+span.SpanContext().TraceID().String()+"-"+span.SpanContext().SpanID().String()) {
		t.Fatalf("traceparent = %q; want the span's context (header %v)", v, h)
	}
	got := tracing.Extract(context.Background(), h)
	sc := trace.SpanContextFromContext(got)
	if sc.TraceID() != span.SpanContext().TraceID() || sc.SpanID() != span.SpanContext().SpanID() || !sc.IsRemote() {
		t.Errorf("extracted %v; want the span's context, remote", sc)
	}

	empty := nats.Header{}
	tracing.Inject(context.Background(), empty)
	if len(empty) != 0 {
		t.Errorf("Inject without a span wrote %v", empty)
	}
	tracing.Inject(ctx, nil) // no header: nothing to do, no panic
}

// TestStartExportsOverOTLP: an endpoint URL turns the exporter on, and
// Shutdown delivers the batched spans to the collector's /v1/traces; no
// endpoint leaves tracing off; a malformed one is refused.
func TestStartExportsOverOTLP(t *testing.T) {
	var posts atomic.Int32
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/traces" {
			posts.Add(1)
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()

	ctx := context.Background()
	for _, endpoint := range []string{collector.URL, strings.TrimPrefix(collector.URL, "http://")} {
		p, err := tracing.Start(ctx, tracing.Options{Endpoint: endpoint, Service: "turnstream-test", Version: "v0"})
		if err != nil {
			t.Fatalf("Start(%q) = %v", endpoint, err)
		}
		if !p.On() || p.TracerProvider() == nil {
			t.Fatalf("Start(%q): tracing off", endpoint)
		}
		_, span := tracing.Tracer(p.TracerProvider()).Start(ctx, "s")
		span.End()
		before := posts.Load()
		if err := p.Shutdown(ctx); err != nil {
			t.Fatalf("Shutdown() = %v", err)
		}
		if posts.Load() == before {
			t.Errorf("endpoint %q: the collector received no spans", endpoint)
		}
	}

	t.Setenv(tracing.EnvEndpoint, "")
	t.Setenv(tracing.EnvTracesEndpoint, "")
	p, err := tracing.Start(ctx, tracing.Options{})
	if err != nil || p.On() || p.TracerProvider() != nil {
		t.Errorf("Start() without an endpoint = %v, on %v; want off", err, p.On())
	}
	for _, bad := range []string{"ftp://x:1", "http://", "host:1/path", "a b"} {
		if _, err := tracing.Start(ctx, tracing.Options{Endpoint: bad}); err == nil {
			t.Errorf("Start(%q) = nil; want an error", bad)
		}
	}
}

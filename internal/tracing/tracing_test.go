package tracing_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/tracing"
	"github.com/turnstream/turnstream/pkg/wire"
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

	// A hostile sender's garbage is no parent: the spans started from it
	// are roots of a new trace.
	for _, bad := range []string{"garbage", "00-" + strings.Repeat("0", 32) + "-" + strings.Repeat("0", 16) + "-01",
		"ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", strings.Repeat("x", 100_000)} {
		if sc := trace.SpanContextFromContext(tracing.Extract(context.Background(), nats.Header{tracing.HeaderTraceparent: {bad}})); sc.IsValid() {
			t.Errorf("traceparent %.40q gave the parent %v; want none", bad, sc)
		}
	}
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

// TestSamplingIgnoresTheClientsFlag: a request whose traceparent says "not
// sampled" (a client sampling 1%) still gets its turn traced, in the
// client's trace; the endpoint is reported without credentials.
func TestSamplingIgnoresTheClientsFlag(t *testing.T) {
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer collector.Close()
	t.Setenv(tracing.EnvSampler, "")
	u := strings.Replace(collector.URL, "http://", "http://user:secret@", 1) + "/v1/traces?token=secret"
	p, err := tracing.Start(context.Background(), tracing.Options{Endpoint: u, Service: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background()) //nolint:errcheck // test collector
	if strings.Contains(p.Endpoint, "secret") || !strings.HasSuffix(p.Endpoint, "/v1/traces") {
		t.Errorf("Endpoint = %q; want the collector's URL without credentials", p.Endpoint)
	}
	h := nats.Header{tracing.HeaderTraceparent: {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"}}
	_, span := tracing.Tracer(p.TracerProvider()).Start(tracing.Extract(context.Background(), h), "turn")
	defer span.End()
	if sc := span.SpanContext(); !sc.IsSampled() || sc.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("span context %v: sampled %v; want sampled, in the client's trace", sc, sc.IsSampled())
	}
}

// summaryExec is an executor that makes one attempt and returns, leaving
// a second attempt open when open is set (an execution cut short).
type summaryExec struct{ open bool }

func (x summaryExec) Execute(_ context.Context, chain []provider.Target, _ *provider.Request, obs provider.Observer) (*provider.Result, error) {
	obs.Event(provider.Event{Kind: provider.EventRequest, Attempt: 1, Target: chain[0]})
	obs.Event(provider.Event{Kind: provider.EventFinish, Attempt: 1, Target: chain[0], Marker: wire.MarkerCompleted,
		FinishReason: wire.FinishStop, Usage: &wire.Usage{InputTokens: 5, OutputTokens: 2}})
	if x.open {
		obs.Event(provider.Event{Kind: provider.EventRequest, Attempt: 2, Target: chain[0]})
		return &provider.Result{}, context.Canceled
	}
	return &provider.Result{}, nil
}

type quiet struct{}

func (quiet) Frame(int, provider.Target, provider.Frame) error { return nil }
func (quiet) Event(provider.Event)                             {}

// TestExecutorSpans: the attempts of an execution that is no step's (a
// history summary's) are marked so; an attempt the execution left open is
// ended as interrupted.
func TestExecutorSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	chain := []provider.Target{{Provider: "p", Model: "m"}}
	for _, open := range []bool{false, true} {
		x := tracing.NewExecutor(tracing.Tracer(tp), summaryExec{open: open}, func(string) string { return "openai" })
		x.Execute(context.Background(), chain, &provider.Request{}, quiet{}) //nolint:errcheck // the spans are checked
	}
	spans := rec.Ended()
	if len(spans) != 3 || len(rec.Started()) != 3 {
		t.Fatalf("%d spans started, %d ended; want 3 and 3", len(rec.Started()), len(spans))
	}
	for i, s := range spans {
		var purpose string
		for _, a := range s.Attributes() {
			if a.Key == tracing.KeyPurpose {
				purpose = a.Value.AsString()
			}
		}
		if purpose != "history_summary" {
			t.Errorf("span %d: purpose %q; want history_summary", i, purpose)
		}
	}
	if spans[2].Status().Code != codes.Error || spans[2].Status().Description != "interrupted" {
		t.Errorf("the open attempt's status = %v; want an error, interrupted", spans[2].Status())
	}
}

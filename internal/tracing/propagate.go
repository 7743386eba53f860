package tracing

import (
	"context"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/propagation"
)

// propagator carries W3C trace context (traceparent, tracestate). It is
// fixed, not the process's global one: what goes into a message header is
// part of the wire contract, whatever else an embedding program installs.
var propagator = propagation.TraceContext{}

// Header names of the trace context in a NATS message, as W3C spells them
// (NATS header names are case-sensitive).
const (
	HeaderTraceparent = "traceparent"
	HeaderTracestate  = "tracestate"
)

// Inject writes the trace context of ctx's span into h; it writes nothing
// when ctx holds no span (tracing off).
func Inject(ctx context.Context, h nats.Header) {
	if h != nil {
		propagator.Inject(ctx, carrier(h))
	}
}

// MaxTracestate bounds the tracestate carried on: a longer one (its
// sender's, possibly a hostile client's) is dropped, and only traceparent
// goes on, so the headers the worker adds to a tool call stay small.
const MaxTracestate = 256

// Extract returns ctx with the remote span context h carries, if any: the
// parent of the spans started from it. Only a process that traces
// extracts: with tracing off, nothing of a sender's context is carried on.
func Extract(ctx context.Context, h nats.Header) context.Context {
	if len(h) == 0 || h.Get(HeaderTraceparent) == "" {
		return ctx
	}
	if ts := h.Get(HeaderTracestate); len(ts) > MaxTracestate {
		h = nats.Header{HeaderTraceparent: {h.Get(HeaderTraceparent)}}
	}
	return propagator.Extract(ctx, carrier(h))
}

// carrier adapts a nats.Header, whose names are exact, to the propagator.
type carrier nats.Header

func (c carrier) Get(key string) string {
	if v := c[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c carrier) Set(key, value string) { c[key] = []string{value} }

func (c carrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

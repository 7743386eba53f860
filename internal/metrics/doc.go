// Package metrics owns turnstream's Prometheus metrics: their definitions
// (every name starts turnstream_), one registry per process (never the
// global default one) with the Go and process collectors, and the adapters
// that feed them from the seams the rest of the code already has: an
// executor wrapping the turn loop's (provider requests, retries,
// fallbacks, time to first chunk, tokens, steps, read from
// provider.Observer calls), the worker's delivery and rejection paths
// (turns by outcome and reason, latency, in-flight turns, redeliveries,
// fenced writes), the bus's publish acks (bus.AckOptions.Acked) and a
// toolworker.Observer (tool calls by tool and outcome).
//
// Labels are bounded: provider, model, route and tool names come from the
// configuration or the tools a process serves; classes, reasons and
// outcomes are enums. No label carries a session or turn id, a tool's
// arguments, or anything read from an event payload.
//
// It must not serve HTTP (internal/ops does), log, or change what it
// observes: every adapter passes its calls on unchanged.
package metrics

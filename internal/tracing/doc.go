// Package tracing owns turnstream's OpenTelemetry traces: the tracer
// provider of a process (OTLP over HTTP, opt-in: --otlp-endpoint or the
// standard OTEL_EXPORTER_OTLP_* variables), the spans of a turn (its
// delivery, each step, each provider attempt, each tool call, and the tool
// worker's execution of a call), their attributes, and trace context in
// NATS message headers (W3C traceparent and tracestate).
//
// A trace of a turn is
//
//	turn                     the delivery (turnstream.delivery counts them)
//	├─ step                  one per provider step (turnstream.step)
//	│  └─ chat <model>       one per provider attempt: GenAI attributes
//	└─ tool_call <tool>      a call, from its dispatch to its result
//	   └─ execute_tool <tool> the tool worker's run (another process)
//
// with the client's span as the turn's parent when the request carried
// trace context (pkg/client adds it), and "turn.abort" for a turn that
// ends without a run. Only a process that traces reads trace context from
// headers (and drops a tracestate over MaxTracestate), so a worker that
// does not trace carries nothing of a client's onto its tool calls.
//
// Attributes follow the OpenTelemetry GenAI semantic conventions
// (gen_ai.provider.name, gen_ai.request.model, gen_ai.usage.*,
// gen_ai.response.finish_reasons, gen_ai.tool.*) plus turnstream.* names.
// They hold names from the configuration, enums, counts, durations and
// identifiers; never a prompt, a completion, reasoning, a tool's arguments
// or its result.
//
// It must not change what it observes: the executor wrapper passes every
// call on unchanged.
package tracing

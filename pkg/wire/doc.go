// Package wire is turnstream's public contract: the records that cross NATS
// (TurnRequest, Message, Chunk, ToolCall, ToolResult, SessionEvent), the
// subjects they travel on, their validation, and the codec chosen by a
// message's Content-Type header (JSON by default, msgpack with the same field
// names).
//
// Chunks carry normalized deltas only. The provider's bytes, which hold
// reasoning and whatever a model writes, are RawFrame records on the
// worker- and operator-only TURN_RAW: the body is the frame as it arrived,
// the headers locate it (RawFrame.Header, Subjects.ParseRawFrame).
//
// Everything here is promised to other languages through the JSON Schemas in
// the repository's schemas/ folder; a test encodes every type and validates
// it against those schemas, so the two cannot drift. This package knows
// nothing about JetStream, providers or the turn loop.
//
// # Audit events
//
// Each SessionEvent type has one payload type (TurnCompleted for
// turn.completed, and so on; EventPayloads lists them), whose fields are
// counts, booleans, durations in milliseconds and Enum values, never
// content. Writers build events with NewEvent; readers get the typed
// payload back with SessionEvent.Decode or DecodePayload. A test holds
// every payload type to that rule, and schemas/session_event.schema.json
// is generated from these types.
//
// # Bounded input
//
// Any NATS client may publish, so nothing in this package recurses over
// input without a bound, and a stack overflow (which no recover can catch)
// is impossible by construction. Before a decoder runs, an iterative
// pre-pass with an explicit stack checks the document's size, nesting depth
// and element count against Limits (DefaultLimits: 1 MiB, 64 levels,
// 100,000 values); the lenient decoders of readers apply the same depth and
// element limits. The strict decoders workers use for requests
// (UnmarshalStrict, UnmarshalStrictWithin) also reject, by walking the
// document against the decode target's type: keys that name no field
// exactly (ReasonUnknownField, case-insensitive matches included),
// duplicate keys at any depth, invalid UTF-8 and trailing data. Every
// rejection is a *ValidationError whose Field is the path of the problem,
// such as "tools[0].parameters.properties.a".
//
// TurnRequest.Validate and the encoders walk free-form values (tool
// parameters, event payloads) iteratively against the same limits before
// encoding them, so a record built in Go is as safe as a decoded one.
//
// Other packages use the same bounds for JSON they get from elsewhere:
// CheckJSON for text (tool-call arguments from a provider, tool results)
// before decoding it, CheckValue for a decoded or built value before a
// recursive walk (redaction, schema checks).
package wire

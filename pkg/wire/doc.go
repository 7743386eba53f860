// Package wire is turnstream's public contract: the records that cross NATS
// (TurnRequest, Message, Chunk, ToolCall, ToolResult, SessionEvent), the
// subjects they travel on, their validation, and the codec chosen by a
// message's Content-Type header (JSON by default, msgpack with the same field
// names).
//
// Everything here is promised to other languages through the JSON Schemas in
// the repository's schemas/ folder; a test encodes every type and validates
// it against those schemas, so the two cannot drift. This package knows
// nothing about JetStream, providers or the turn loop.
package wire

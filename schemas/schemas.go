// Package schemas embeds the JSON Schemas (draft 2020-12) of turnstream's
// public records and of the worker config file, so code can validate against
// exactly the files other languages read.
//
// session_event.schema.json and config.schema.json are generated from the
// Go types (internal/schemagen): edit the types and their doc comments,
// then run go generate ./schemas. A test fails when the files differ from
// what the generator produces. The other files are written by hand;
// pkg/wire's tests check them against the Go types.
package schemas

//go:generate go run ./gen

import "embed"

// FS holds every *.schema.json file of this folder.
//
//go:embed *.schema.json
var FS embed.FS

// Schema file names.
const (
	TurnRequest  = "turn_request.schema.json"
	Message      = "message.schema.json"
	Chunk        = "chunk.schema.json"
	ToolCall     = "tool_call.schema.json"
	ToolResult   = "tool_result.schema.json"
	SessionEvent = "session_event.schema.json"
	Cancel       = "cancel.schema.json"
	Config       = "config.schema.json"
)

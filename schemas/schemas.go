// Package schemas embeds the JSON Schemas (draft 2020-12) of turnstream's
// public records and of the worker config file, so code can validate against
// exactly the files other languages read.
package schemas

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

package openaiwire

import "github.com/turnstream/turnstream/pkg/wire"

// ChatRequest is the body of a streaming Chat Completions request; M is
// the message type of the caller's dialect.
type ChatRequest[M any] struct {
	Model         string         `json:"model"`
	Messages      []M            `json:"messages"`
	Tools         []ChatTool     `json:"tools,omitempty"`
	Stream        bool           `json:"stream"`
	StreamOptions *StreamOptions `json:"stream_options,omitempty"`
}

// StreamOptions are a streaming request's options.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// ChatToolCall is an assistant message's tool call.
type ChatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function ChatFunction `json:"function"`
}

// ChatFunction is the function a ChatToolCall calls, arguments as sent.
type ChatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ChatTool is a tool the model may call.
type ChatTool struct {
	Type     string      `json:"type"`
	Function ChatToolDef `json:"function"`
}

// ChatToolDef is a function tool's definition.
type ChatToolDef struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters"`
}

// ChatToolCalls is calls on the wire, in order, as function calls; nil for
// none.
func ChatToolCalls(calls []wire.Call) []ChatToolCall {
	var out []ChatToolCall
	for _, c := range calls {
		out = append(out, ChatToolCall{ID: c.ID, Type: "function", Function: ChatFunction{Name: c.Name, Arguments: c.Arguments}})
	}
	return out
}

// ChatTools is tools on the wire, in order, as function tools; nil for
// none.
func ChatTools(tools []wire.Tool) []ChatTool {
	var out []ChatTool
	for _, t := range tools {
		out = append(out, ChatTool{Type: "function", Function: ChatToolDef{Name: t.Name, Description: t.Description, Parameters: ToolParameters(t.Parameters)}})
	}
	return out
}

// ToolParameters is a function tool's parameters on the wire: p, or the
// empty object schema when p is nil, never null.
func ToolParameters(p map[string]any) map[string]any {
	if p == nil {
		return map[string]any{"type": "object", "properties": map[string]any{}}
	}
	return p
}

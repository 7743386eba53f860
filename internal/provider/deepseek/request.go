package deepseek

import (
	"encoding/json"
	"fmt"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/pkg/wire"
)

// chatRequest is the body of a streaming DeepSeek Chat Completions request.
type chatRequest struct {
	Model         string        `json:"model"`
	Messages      []chatMessage `json:"messages"`
	Tools         []chatTool    `json:"tools,omitempty"`
	Stream        bool          `json:"stream"`
	StreamOptions streamOptions `json:"stream_options"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role string `json:"role"`
	// Content is null only for an assistant message with tool calls and no text.
	Content *string `json:"content"`
	// ReasoningContent is the thinking-mode echo: nil is absent, a pointer
	// to "" is present and empty.
	ReasoningContent *string        `json:"reasoning_content,omitempty"`
	ToolCalls        []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string         `json:"tool_call_id,omitempty"`
}

type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string      `json:"type"`
	Function chatToolDef `json:"function"`
}

type chatToolDef struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters"`
}

// joiner separates joined system and user text.
const joiner = "\n\n"

var emptyObjectSchema = map[string]any{"type": "object", "properties": map[string]any{}}

// Prepare serializes req as a streaming DeepSeek request for model:
//   - any image fails with ErrImages, before any text is touched;
//   - the system prompt and every system-role message, in order, become
//     one first message;
//   - consecutive user messages become one, their text joined;
//   - tool results (role tool, or role user with a tool-call id) are
//     standalone role tool messages;
//   - assistant messages keep their text and tool calls in order, content
//     null when there are calls and no text, and carry reasoning_content
//     only when they made tool calls and model's capabilities require the
//     echo: exactly Message.Reasoning, absent when nil.
//
// The same req and model always give the same bytes.
func (a *Adapter) Prepare(req *provider.Request, model provider.Model) ([]byte, error) {
	for i := range req.Messages {
		if len(req.Messages[i].Images) > 0 {
			return nil, provider.Fail(provider.ClassInvalidRequest, "images not supported", ErrImages)
		}
	}
	echo := model.Capabilities.ReasoningEcho
	system := req.System
	msgs := make([]chatMessage, 1, len(req.Messages)+1) // [0] is the system message
	for i := range req.Messages {
		m := &req.Messages[i]
		switch {
		case m.Role == wire.RoleSystem:
			system = join(system, m.Content)
		case m.Role == wire.RoleTool, m.Role == wire.RoleUser && m.ToolCallID != "":
			msgs = append(msgs, chatMessage{Role: string(wire.RoleTool), Content: ptr(m.Content), ToolCallID: m.ToolCallID})
		case m.Role == wire.RoleUser:
			if last := &msgs[len(msgs)-1]; len(msgs) > 1 && last.Role == string(wire.RoleUser) {
				*last.Content = join(*last.Content, m.Content)
				continue
			}
			msgs = append(msgs, chatMessage{Role: string(wire.RoleUser), Content: ptr(m.Content)})
		case m.Role == wire.RoleAssistant:
			msgs = append(msgs, assistant(m, echo))
		default:
			return nil, provider.Fail(provider.ClassInvalidRequest, "unknown message role", ErrRole)
		}
	}
	if system != "" {
		msgs[0] = chatMessage{Role: string(wire.RoleSystem), Content: &system}
	} else {
		msgs = msgs[1:]
	}
	body := chatRequest{
		Model:         model.Name,
		Messages:      msgs,
		Stream:        true,
		StreamOptions: streamOptions{IncludeUsage: true},
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if params == nil {
			params = emptyObjectSchema
		}
		body.Tools = append(body.Tools, chatTool{Type: "function", Function: chatToolDef{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, provider.Fail(provider.ClassInvalidRequest, "request not serializable", fmt.Errorf("deepseek: %w", err))
	}
	return b, nil
}

// assistant is m on the wire. Only a tool-call turn may carry the
// reasoning echo; a plain turn's reasoning stays in the session log.
func assistant(m *provider.Message, echo bool) chatMessage {
	cm := chatMessage{Role: string(wire.RoleAssistant), Content: ptr(m.Content)}
	if len(m.ToolCalls) == 0 {
		return cm
	}
	if m.Content == "" {
		cm.Content = nil
	}
	cm.ToolCalls = make([]chatToolCall, 0, len(m.ToolCalls))
	for _, c := range m.ToolCalls {
		cm.ToolCalls = append(cm.ToolCalls, chatToolCall{ID: c.ID, Type: "function", Function: chatFunction{Name: c.Name, Arguments: c.Arguments}})
	}
	if echo && m.Reasoning != nil {
		cm.ReasoningContent = ptr(*m.Reasoning)
	}
	return cm
}

// join appends s to text, separated by joiner; empty parts add nothing.
func join(text, s string) string {
	switch {
	case s == "":
		return text
	case text == "":
		return s
	}
	return text + joiner + s
}

func ptr(s string) *string { return &s }

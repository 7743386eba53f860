package openaichat

import (
	"encoding/json"
	"fmt"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/pkg/wire"
)

// chatRequest is the Chat Completions request body.
type chatRequest struct {
	Model         string         `json:"model"`
	Messages      []chatMessage  `json:"messages"`
	Tools         []chatTool     `json:"tools,omitempty"`
	Stream        bool           `json:"stream"`
	StreamOptions *streamOptions `json:"stream_options,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role string `json:"role"`
	// Content is a string, content parts (text with images), or null only
	// for an assistant message with tool calls and no text.
	Content    any            `json:"content"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type contentPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
}

type imageURL struct {
	URL string `json:"url"`
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

var emptyObjectSchema = map[string]any{"type": "object", "properties": map[string]any{}}

// Prepare serializes req as a streaming Chat Completions request for model.
func (a *Adapter) Prepare(req *provider.Request, model provider.Model) ([]byte, error) {
	body := chatRequest{
		Model:         model.Name,
		Stream:        true,
		StreamOptions: &streamOptions{IncludeUsage: true},
		Messages:      make([]chatMessage, 0, len(req.Messages)+1),
	}
	if req.System != "" {
		s := req.System
		body.Messages = append(body.Messages, chatMessage{Role: string(wire.RoleSystem), Content: s})
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		cm := chatMessage{Role: string(m.Role), ToolCallID: m.ToolCallID}
		cm.Content = m.Content
		if len(m.Images) > 0 {
			if m.Role != wire.RoleUser {
				return nil, provider.Fail(provider.ClassInvalidRequest, "images on a non-user message", nil)
			}
			parts := []contentPart{{Type: "text", Text: m.Content}}
			for _, url := range m.Images {
				parts = append(parts, contentPart{Type: "image_url", ImageURL: &imageURL{URL: url}})
			}
			cm.Content = parts
		}
		if m.Role == wire.RoleAssistant && len(m.ToolCalls) > 0 {
			if m.Content == "" {
				cm.Content = nil
			}
			for _, c := range m.ToolCalls {
				cm.ToolCalls = append(cm.ToolCalls, chatToolCall{ID: c.ID, Type: "function", Function: chatFunction{Name: c.Name, Arguments: c.Arguments}})
			}
		}
		body.Messages = append(body.Messages, cm)
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
		return nil, provider.Fail(provider.ClassInvalidRequest, "request not serializable", fmt.Errorf("openaichat: %w", err))
	}
	return b, nil
}

package openaichat

import (
	"encoding/json"
	"fmt"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaiwire"
	"github.com/turnstream/turnstream/pkg/wire"
)

// chatMessage is a Chat Completions message: the message type of this
// dialect's openaiwire.ChatRequest.
type chatMessage struct {
	Role string `json:"role"`
	// Content is a string, content parts (text with images), or null only
	// for an assistant message with tool calls and no text.
	Content    any                       `json:"content"`
	ToolCalls  []openaiwire.ChatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string                    `json:"tool_call_id,omitempty"`
}

type contentPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
}

type imageURL struct {
	URL string `json:"url"`
}

// Prepare serializes req as a streaming Chat Completions request for model.
func (a *Adapter) Prepare(req *provider.Request, model provider.Model) ([]byte, error) {
	body := openaiwire.ChatRequest[chatMessage]{
		Model:         model.Name,
		Stream:        true,
		StreamOptions: &openaiwire.StreamOptions{IncludeUsage: true},
		Messages:      make([]chatMessage, 0, len(req.Messages)+1),
		Tools:         openaiwire.ChatTools(req.Tools),
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
			cm.ToolCalls = openaiwire.ChatToolCalls(m.ToolCalls)
		}
		body.Messages = append(body.Messages, cm)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, provider.Fail(provider.ClassInvalidRequest, "request not serializable", fmt.Errorf("openaichat: %w", err))
	}
	return b, nil
}

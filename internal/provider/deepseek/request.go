package deepseek

import (
	"encoding/json"
	"fmt"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaiwire"
	"github.com/turnstream/turnstream/pkg/wire"
)

// chatMessage is a DeepSeek Chat Completions message: the message type of
// this dialect's openaiwire.ChatRequest.
type chatMessage struct {
	Role string `json:"role"`
	// Content is null only for an assistant message with tool calls and no text.
	Content *string `json:"content"`
	// ReasoningContent is the thinking-mode echo: nil is absent, a pointer
	// to "" is present and empty.
	ReasoningContent *string                   `json:"reasoning_content,omitempty"`
	ToolCalls        []openaiwire.ChatToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string                    `json:"tool_call_id,omitempty"`
}

// joiner separates joined system and user text.
const joiner = "\n\n"

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
	body := openaiwire.ChatRequest[chatMessage]{
		Model:         model.Name,
		Messages:      msgs,
		Tools:         openaiwire.ChatTools(req.Tools),
		Stream:        true,
		StreamOptions: &openaiwire.StreamOptions{IncludeUsage: true},
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
	cm.ToolCalls = openaiwire.ChatToolCalls(m.ToolCalls)
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

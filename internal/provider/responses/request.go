package responses

import (
	"encoding/json"
	"fmt"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaiwire"
	"github.com/turnstream/turnstream/pkg/wire"
)

// requestBody is the Responses request body. Input holds the item structs
// below; json.Marshal of structs and of map[string]any (sorted keys) makes
// the same request the same bytes.
type requestBody struct {
	Model        string    `json:"model"`
	Instructions string    `json:"instructions,omitempty"`
	Input        []any     `json:"input"`
	Tools        []toolDef `json:"tools,omitempty"`
	Stream       bool      `json:"stream"`
	Store        bool      `json:"store"`
	// PreviousResponseID continues a stored response (durable cursor).
	PreviousResponseID string `json:"previous_response_id,omitempty"`
	// Include asks for the encrypted reasoning a stateless request can
	// replay.
	Include []string `json:"include,omitempty"`
}

// messageItem is a role-based input item.
type messageItem struct {
	Role    string `json:"role"`
	Content []any  `json:"content"`
}

type textPart struct {
	Type string `json:"type"` // input_text or output_text
	Text string `json:"text"`
}

type imagePart struct {
	Type     string `json:"type"` // input_image
	ImageURL string `json:"image_url"`
	Detail   string `json:"detail"`
}

type functionCallItem struct {
	Type      string `json:"type"` // function_call
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type functionCallOutputItem struct {
	Type   string `json:"type"` // function_call_output
	CallID string `json:"call_id"`
	Output string `json:"output"`
}

type toolDef struct {
	Type        string         `json:"type"`
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters"`
	Strict      bool           `json:"strict"`
}

// Prepare serializes req as a Responses request for model: the system
// prompt as instructions; then, in order, user messages (text, then images
// as input_image), assistant text as output_text followed by the
// assistant's function_call items, and tool results as
// function_call_output items (an assistant message with neither text nor
// calls sends nothing); function tools, not strict. The request is
// stateless (store false) unless the adapter stores responses, streams
// when the adapter does, and continues req.PreviousResponseID when set.
//
// An assistant message's echo (Message.Reasoning, the encrypted reasoning
// items of the answer it replays) goes first, as reasoning items. A
// stateless request of a model that takes native tool history asks for
// its own reasoning's encrypted_content, which the answer's echo keeps.
func (a *Adapter) Prepare(req *provider.Request, model provider.Model) ([]byte, error) {
	body := requestBody{
		Model:        model.Name,
		Instructions: req.System,
		Input:        make([]any, 0, len(req.Messages)),
		Stream:       a.stream,
		Store:        a.store,
		// A cursor names a response the provider stored.
		PreviousResponseID: req.PreviousResponseID,
	}
	if !a.store && model.Capabilities.NativeToolHistory {
		body.Include = []string{includeEncrypted}
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		switch m.Role {
		case wire.RoleTool:
			body.Input = append(body.Input, functionCallOutputItem{Type: "function_call_output", CallID: m.ToolCallID, Output: m.Content})
		case wire.RoleAssistant:
			body.Input = append(body.Input, decodeEcho(m.Reasoning)...)
			if m.Content != "" {
				body.Input = append(body.Input, messageItem{Role: string(wire.RoleAssistant), Content: []any{textPart{Type: "output_text", Text: m.Content}}})
			}
			for _, c := range m.ToolCalls {
				args := c.Arguments
				if args == "" {
					args = "{}"
				}
				body.Input = append(body.Input, functionCallItem{Type: "function_call", CallID: c.ID, Name: c.Name, Arguments: args})
			}
		default: // user, and a system message among the others
			content := make([]any, 0, 1+len(m.Images))
			if m.Content != "" || len(m.Images) == 0 {
				content = append(content, textPart{Type: "input_text", Text: m.Content})
			}
			for _, img := range m.Images {
				content = append(content, imagePart{Type: "input_image", ImageURL: img, Detail: "auto"})
			}
			body.Input = append(body.Input, messageItem{Role: string(m.Role), Content: content})
		}
	}
	for _, t := range req.Tools {
		body.Tools = append(body.Tools, toolDef{Type: "function", Name: t.Name, Description: t.Description, Parameters: openaiwire.ToolParameters(t.Parameters)})
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, provider.Fail(provider.ClassInvalidRequest, "request not serializable", fmt.Errorf("responses: %w", err))
	}
	return b, nil
}

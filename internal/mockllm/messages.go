package mockllm

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
)

// AnthropicMessage is one message of a received Anthropic Messages
// request: its role and its content blocks (a string content is one text
// block).
type AnthropicMessage struct {
	Role    string          `json:"role"`
	Content AnthropicBlocks `json:"content"`
}

// AnthropicBlock is one content block of a received message: text, image,
// tool_use, tool_result, thinking or redacted_thinking.
type AnthropicBlock struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	// ID, Name and Input of a tool_use block.
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// ToolUseID, Content and IsError of a tool_result block.
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   AnthropicBlocks `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	// Thinking and Signature of a thinking block, Data of a redacted one.
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
}

// AnthropicBlocks is a message's content, or a tool result's: a string or
// a list of blocks. A string is read as one text block.
type AnthropicBlocks []AnthropicBlock

// UnmarshalJSON accepts a string or a list of blocks.
func (c *AnthropicBlocks) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*c = nil
		return nil
	}
	var s string
	if json.Unmarshal(b, &s) == nil {
		*c = AnthropicBlocks{{Type: "text", Text: s}}
		return nil
	}
	var blocks []AnthropicBlock
	if err := json.Unmarshal(b, &blocks); err != nil {
		return err
	}
	*c = blocks
	return nil
}

// Text joins the text of the text blocks.
func (c AnthropicBlocks) Text() string {
	var b strings.Builder
	for _, p := range c {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// Of returns the blocks of type typ, in order.
func (c AnthropicBlocks) Of(typ string) []AnthropicBlock {
	var out []AnthropicBlock
	for _, p := range c {
		if p.Type == typ {
			out = append(out, p)
		}
	}
	return out
}

// IsMessages reports whether the request was sent to Anthropic's Messages
// endpoint.
func (r *Request) IsMessages() bool { return isMessagesPath(r.Path) }

// LastAnthropic returns the last message of a Messages request, or a zero
// message.
func (r *Request) LastAnthropic() AnthropicMessage {
	if len(r.AnthropicMessages) == 0 {
		return AnthropicMessage{}
	}
	return r.AnthropicMessages[len(r.AnthropicMessages)-1]
}

func isMessagesPath(path string) bool {
	return path == "/v1/messages" || path == "/messages"
}

type messagesRequestJSON struct {
	Model     string             `json:"model"`
	MaxTokens int                `json:"max_tokens"`
	System    AnthropicBlocks    `json:"system"`
	Messages  []AnthropicMessage `json:"messages"`
	Tools     []struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		InputSchema map[string]any `json:"input_schema"`
	} `json:"tools"`
	Thinking *struct {
		Type string `json:"type"`
	} `json:"thinking"`
	Stream bool `json:"stream"`
}

// parseMessagesRequest reads a Messages request body. The system prompt
// may be a string or text blocks; tools are kept in the chat shape so
// scripts read tools the same way for every API.
func parseMessagesRequest(r *http.Request, body []byte) (*Request, error) {
	var rj messagesRequestJSON
	if err := json.Unmarshal(body, &rj); err != nil {
		return nil, err
	}
	req := &Request{
		Model: rj.Model, System: rj.System.Text(), AnthropicMessages: rj.Messages, MaxTokens: rj.MaxTokens, Stream: rj.Stream,
		Thinking: rj.Thinking != nil && rj.Thinking.Type != "" && rj.Thinking.Type != "disabled",
		Body:     body, Header: r.Header.Clone(), Path: r.URL.Path,
	}
	for _, t := range rj.Tools {
		var tool Tool
		tool.Type = "function"
		tool.Function.Name, tool.Function.Description, tool.Function.Parameters = t.Name, t.Description, t.InputSchema
		req.Tools = append(req.Tools, tool)
	}
	return req, nil
}

// AnthropicError returns an HTTP error response with an Anthropic-shaped
// error body: {"type":"error","error":{"type":typ,"message":message}}.
func AnthropicError(status int, typ, message string, header http.Header) *Response {
	body := `{"type":"error","error":{"type":` + quote(typ) + `,"message":` + quote(message) + `},"request_id":"req_mock"}`
	return &Response{Status: status, Body: body, Header: header}
}

package mockllm

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
)

// Request is a received Chat Completions, Responses or Anthropic Messages
// request.
type Request struct {
	Model string
	// Messages of a Chat Completions request.
	Messages []Message
	// Instructions and Input of a Responses request (Path ending in
	// /responses).
	Instructions string
	Input        []ResponsesItem
	// System, AnthropicMessages, MaxTokens and Thinking (extended thinking
	// asked for) of an Anthropic Messages request (Path ending in
	// /messages).
	System            string
	AnthropicMessages []AnthropicMessage
	MaxTokens         int
	Thinking          bool
	// Tools holds the function tools of every API in the chat shape.
	Tools  []Tool
	Stream bool
	// Body is the request body exactly as received.
	Body   []byte
	Header http.Header
	// Path is the URL path it was sent to.
	Path string

	written *atomic.Int64
}

// Written is how many bytes of the answer's body the server has written
// so far: for a flood, what it wrote before the client hung up (some of it
// may still sit in socket buffers, unread).
func (r *Request) Written() int64 {
	if r.written == nil {
		return 0
	}
	return r.written.Load()
}

// Message is one message of a received request.
type Message struct {
	Role             string     `json:"role"`
	Content          *string    `json:"content"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string     `json:"tool_call_id,omitempty"`
	ReasoningContent *string    `json:"reasoning_content,omitempty"`
}

// Text returns the content, "" when null.
func (m Message) Text() string {
	if m.Content == nil {
		return ""
	}
	return *m.Content
}

// ToolCall is a call in a request or one the mock makes.
type ToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Tool is an offered tool.
type Tool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitempty"`
		Parameters  map[string]any `json:"parameters,omitempty"`
	} `json:"function"`
}

type requestJSON struct {
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	Tools    []Tool    `json:"tools"`
	Stream   bool      `json:"stream"`
}

func parseRequest(r *http.Request, body []byte) (*Request, error) {
	switch {
	case isResponsesPath(r.URL.Path):
		return parseResponsesRequest(r, body)
	case isMessagesPath(r.URL.Path):
		return parseMessagesRequest(r, body)
	}
	var rj requestJSON
	if err := json.Unmarshal(body, &rj); err != nil {
		return nil, err
	}
	return &Request{
		Model: rj.Model, Messages: rj.Messages, Tools: rj.Tools, Stream: rj.Stream,
		Body: body, Header: r.Header.Clone(), Path: r.URL.Path,
	}, nil
}

// LastMessage returns the last message, or a zero Message.
func (r *Request) LastMessage() Message {
	if len(r.Messages) == 0 {
		return Message{}
	}
	return r.Messages[len(r.Messages)-1]
}

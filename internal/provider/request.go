package provider

import (
	"github.com/turnstream/turnstream/pkg/wire"
)

// Message is one provider-bound message, in request shape: it carries only
// what a provider may receive, never session metadata.
type Message struct {
	Role    wire.Role
	Content string
	// ToolCalls of an assistant message, with their replay IDs.
	ToolCalls []wire.Call
	// ToolCallID of a tool message.
	ToolCallID string
	// Reasoning is the provider's replay echo for an assistant message: set
	// only when the target requires it and replay is safe; nil is absent,
	// a pointer to "" is present and empty.
	Reasoning *string
	// Images attached to a user message, as URLs or data URIs. Adapters
	// that cannot send images reject the request before any flattening.
	Images []string
}

// Request is one provider call of a step, before a target is chosen.
type Request struct {
	// System is sent first.
	System string
	// Messages follow the system prompt, the current input last.
	Messages []Message
	// Tools offered to the model.
	Tools []wire.Tool
}

// Target is a resolved provider and model.
type Target struct {
	Provider string
	Model    string
}

func (t Target) String() string { return t.Provider + "/" + t.Model }

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
	// IsError marks a tool message whose result is an error (the tool
	// failed, or the result was synthesized for a missing one). Adapters
	// whose wire has the flag send it (Anthropic's tool_result is_error);
	// the others carry the error in Content alone.
	IsError bool
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
	// Messages follow the system prompt, the current input last. With a
	// Projector they are what it returns for each target instead.
	Messages []Message
	// Tools offered to the model.
	Tools []wire.Tool
	// Projector, when set, builds Messages per target: native or flat tool
	// history, reasoning echo and cursors depend on where the request goes.
	Projector Projector
	// PreviousResponseID continues a provider-side conversation (Responses
	// durable cursor); Messages then hold only what is new since it.
	PreviousResponseID string
}

// Destination is a resolved target as prompt assembly sees it.
type Destination struct {
	Target Target
	// API is the target's wire API, and Replay how history is replayed
	// to it.
	API    string
	Replay Replay
	Model  Model
	// CallIDFormat is the tool-call id format the target accepts.
	CallIDFormat string
	// DurableCursor says the target can continue a stored response.
	DurableCursor bool
}

// Projected is a request's history for one destination.
type Projected struct {
	Messages []Message
	// PreviousResponseID, when set, is the durable cursor the messages
	// continue from.
	PreviousResponseID string
}

// Projector turns a step's history into one destination's messages.
type Projector interface {
	Project(d Destination) (Projected, error)
}

// Target is a resolved provider and model.
type Target struct {
	Provider string
	Model    string
}

func (t Target) String() string { return t.Provider + "/" + t.Model }

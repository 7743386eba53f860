package provider

// Capabilities say what a provider, or one of its models, can serve. A
// target is used only when its capabilities cover the request.
type Capabilities struct {
	// Text generation.
	Text bool
	// Streaming responses.
	Streaming bool
	// Tools: the model can call offered tools.
	Tools bool
	// NativeToolHistory: prior tool calls and results may be replayed in the
	// provider's native shape (assistant tool_calls, tool messages).
	NativeToolHistory bool
	// ReasoningEcho: assistant tool-call turns must be replayed with the
	// provider's reasoning (DeepSeek thinking mode's reasoning_content).
	ReasoningEcho bool
	// StatefulContinuation: the provider keeps a durable cursor between
	// calls (Responses previous_response_id).
	StatefulContinuation bool
	// StructuredOutput: the provider can constrain output to a JSON Schema.
	StructuredOutput bool
}

// Model is one advertised model and its context.
type Model struct {
	Name string
	// ContextTokens is the model's context window.
	ContextTokens int
	// Capabilities of the model, already combined with its provider's.
	Capabilities Capabilities
}

// Metadata describes a registration.
type Metadata struct {
	// ID must equal the registration's ID.
	ID string
	// API is the name of the wire API the adapter speaks, and Replay how
	// history is replayed to it (from the API's descriptor).
	API    string
	Replay Replay
	// Deprecated registrations stay registered but advertise no models and
	// refuse execution.
	Deprecated bool
	// Capabilities of the provider.
	Capabilities Capabilities
	// Models the provider serves.
	Models []Model
	// CallIDFormat is the tool-call id format the provider accepts
	// (CallIDDefault or CallIDAlnum9); requests are remapped to it.
	CallIDFormat string
	// DurableCursor says requests may continue a stored response by id:
	// the API supports it, the model's capabilities allow it, and the
	// provider keeps responses.
	DurableCursor bool
}

// Skip reasons: why a target could not serve a request (coarse, for events).
const (
	SkipDeprecated    = "deprecated_provider"
	SkipUnknown       = "unknown_provider"
	SkipUnknownModel  = "unknown_model"
	SkipNoText        = "no_text"
	SkipNoTools       = "no_tools"
	SkipNoStreaming   = "no_streaming"
	SkipPrepareFailed = "prepare_failed"
)

// check returns why caps cannot serve req, or "".
func (c Capabilities) check(req *Request) string {
	switch {
	case !c.Text:
		return SkipNoText
	case len(req.Tools) > 0 && !c.Tools:
		return SkipNoTools
	}
	return ""
}

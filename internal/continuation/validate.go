package continuation

// Current is the target of the turn about to run, as the decision needs
// it: names and hashes, never the prompt or the tools themselves.
type Current struct {
	// Provider is the registration id of the target provider.
	Provider string
	// API is the target's wire API.
	API string
	// Model is the target model.
	Model string
	// SystemPromptHash is SystemPromptHash of the turn's system prompt.
	SystemPromptHash string
	// ToolsetHash is ToolsetHash of the tools the turn offers.
	ToolsetHash string
	// CursorDisabled is set when configuration turns the target's
	// StatefulContinuation capability off: its cursors are not sent even
	// where its API supports them. Default false: the API's strategy
	// decides.
	CursorDisabled bool
}

// Mismatch names a way the stored envelope no longer matches the target.
type Mismatch string

// Mismatches, in the order Validate reports them.
const (
	MismatchProvider     Mismatch = "provider"
	MismatchModel        Mismatch = "model"
	MismatchMode         Mismatch = "mode"
	MismatchSystemPrompt Mismatch = "system_prompt"
	MismatchToolset      Mismatch = "toolset"
)

// Reason returns the decision reason of m.
func (m Mismatch) Reason() Reason {
	switch m {
	case MismatchProvider:
		return ReasonProviderChanged
	case MismatchModel:
		return ReasonModelChanged
	case MismatchMode:
		return ReasonModeChanged
	case MismatchSystemPrompt:
		return ReasonSystemPromptChanged
	case MismatchToolset:
		return ReasonToolsetChanged
	}
	return ""
}

// Validate returns every way e does not match cur, nil if it matches or e
// is nil. The mode matches when cur's API records the envelope's mode.
func Validate(e *Envelope, cur Current) []Mismatch {
	if e == nil {
		return nil
	}
	var out []Mismatch
	if e.Provider != cur.Provider {
		out = append(out, MismatchProvider)
	}
	if e.ModelName != cur.Model {
		out = append(out, MismatchModel)
	}
	if e.Mode != StrategyFor(cur.API).Mode() {
		out = append(out, MismatchMode)
	}
	if e.SystemPromptHash != cur.SystemPromptHash {
		out = append(out, MismatchSystemPrompt)
	}
	if e.ToolsetHash != cur.ToolsetHash {
		out = append(out, MismatchToolset)
	}
	return out
}

package continuation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/turnstream/turnstream/internal/provider/apis"
)

// SchemaVersion is the envelope schema this package reads and writes.
const SchemaVersion = 1

// Envelope is the continuation state one turn leaves for the next, kept in
// worker-only state. It holds no message content: hashes, names, a count
// and the opaque cursor.
type Envelope struct {
	// SchemaVersion is SchemaVersion.
	SchemaVersion int `json:"schema_version"`
	// Provider is the registration id of the provider that served the turn.
	Provider string `json:"provider"`
	// Mode is the durable mode of Cursor (its API's CursorMode), ModeReplay or
	// ModeStatelessLoop.
	Mode string `json:"mode"`
	// ModelName is the model that served the turn.
	ModelName string `json:"model_name"`
	// SystemPromptHash is SystemPromptHash of the turn's system prompt.
	SystemPromptHash string `json:"system_prompt_hash"`
	// ToolsetHash is ToolsetHash of the tools the turn offered.
	ToolsetHash string `json:"toolset_hash"`
	// Cursor is the provider's handle on the conversation (a Responses
	// response id); set exactly when Mode is a durable mode.
	Cursor string `json:"cursor,omitempty"`
	// LoopMessages counts the messages a turn-local loop accumulated
	// (ModeStatelessLoop only): a count, never the messages.
	LoopMessages int `json:"loop_messages,omitempty"`
	// Context is the context usage the turn ended with, nil if unknown.
	Context *ContextFigures `json:"context,omitempty"`
}

// ContextFigures are the context usage figures of a turn.
type ContextFigures struct {
	// ProviderReportedInputTokens is the input tokens of the turn's last
	// provider call as the provider reported them, nil if it did not.
	ProviderReportedInputTokens *int64 `json:"provider_reported_input_tokens,omitempty"`
	// ContextLimit is the model's context window in tokens, 0 if unknown.
	ContextLimit int `json:"context_limit"`
	// LastUpdatedAt is when the envelope was built.
	LastUpdatedAt time.Time `json:"last_updated_at,omitzero"`
}

// Durable reports whether e carries a cursor the next turn may continue.
func (e *Envelope) Durable() bool {
	return e != nil && isDurableMode(e.Mode) && e.Cursor != ""
}

func isDurableMode(mode string) bool {
	for _, a := range apis.All() {
		if s := StrategyFor(a.Name); s.SupportsDurableCursor && s.DurableMode == mode {
			return true
		}
	}
	return false
}

// Parse reads a stored envelope. Empty data or JSON null is no state:
// Parse returns nil and no error. A schema version other than
// SchemaVersion is a *VersionError (errors.Is ErrVersion); data that is
// not an envelope object is ErrMalformed; an envelope missing a required
// field or contradicting itself is ErrInvalid. Callers treat any error as
// no state: replay is always correct.
func Parse(data []byte) (*Envelope, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || bytes.Equal(data, []byte("null")) {
		return nil, nil
	}
	// The version first, so a future schema reads as a version error even
	// where its fields no longer decode into this one.
	var head struct {
		SchemaVersion int `json:"schema_version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if head.SchemaVersion != SchemaVersion {
		return nil, &VersionError{Got: head.SchemaVersion}
	}
	var e Envelope
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if err := e.validate(); err != nil {
		return nil, err
	}
	return &e, nil
}

// Serialize encodes e for storage. A nil envelope is JSON null (no state);
// an envelope Parse would refuse is an error.
func Serialize(e *Envelope) ([]byte, error) {
	if e == nil {
		return []byte("null"), nil
	}
	if e.SchemaVersion != SchemaVersion {
		return nil, &VersionError{Got: e.SchemaVersion}
	}
	if err := e.validate(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return b, nil
}

// validate checks the fields of a version-1 envelope.
func (e *Envelope) validate() error {
	missing := func(field string) error { return fmt.Errorf("%w: missing %s", ErrInvalid, field) }
	switch {
	case e.Provider == "":
		return missing("provider")
	case e.Mode == "":
		return missing("mode")
	case e.ModelName == "":
		return missing("model_name")
	case e.SystemPromptHash == "":
		return missing("system_prompt_hash")
	case e.ToolsetHash == "":
		return missing("toolset_hash")
	case !isHash(e.SystemPromptHash):
		return fmt.Errorf("%w: system_prompt_hash is not a sha256 hex digest", ErrInvalid)
	case !isHash(e.ToolsetHash):
		return fmt.Errorf("%w: toolset_hash is not a sha256 hex digest", ErrInvalid)
	case e.LoopMessages < 0:
		return fmt.Errorf("%w: negative loop_messages", ErrInvalid)
	}
	switch {
	case isDurableMode(e.Mode):
		if e.Cursor == "" {
			return fmt.Errorf("%w: durable mode %q without a cursor", ErrInvalid, e.Mode)
		}
		if e.LoopMessages != 0 {
			return fmt.Errorf("%w: loop_messages on durable mode %q", ErrInvalid, e.Mode)
		}
	case e.Mode == ModeReplay:
		if e.Cursor != "" {
			return fmt.Errorf("%w: cursor on mode %q", ErrInvalid, e.Mode)
		}
		if e.LoopMessages != 0 {
			return fmt.Errorf("%w: loop_messages on mode %q", ErrInvalid, e.Mode)
		}
	case e.Mode == ModeStatelessLoop:
		if e.Cursor != "" {
			return fmt.Errorf("%w: cursor on mode %q", ErrInvalid, e.Mode)
		}
	default:
		return fmt.Errorf("%w: unknown mode %q", ErrInvalid, e.Mode)
	}
	if c := e.Context; c != nil {
		if c.ContextLimit < 0 {
			return fmt.Errorf("%w: negative context_limit", ErrInvalid)
		}
		if c.ProviderReportedInputTokens != nil && *c.ProviderReportedInputTokens < 0 {
			return fmt.Errorf("%w: negative provider_reported_input_tokens", ErrInvalid)
		}
	}
	return nil
}

func isHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

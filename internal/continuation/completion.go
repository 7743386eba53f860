package continuation

import (
	"time"

	"github.com/turnstream/turnstream/internal/provider"
)

// Completion is what a completed turn tells NewEnvelope: names, hashes,
// counts and the cursor, never content.
type Completion struct {
	// Provider is the registration id of the provider that served the turn.
	Provider string
	// API is the provider's wire API; its strategy sets the mode.
	API string
	// Model is the model that served the turn.
	Model string
	// SystemPromptHash is SystemPromptHash of the turn's system prompt.
	SystemPromptHash string
	// ToolsetHash is ToolsetHash of the tools the turn offered.
	ToolsetHash string
	// Cursor is the id of the turn's last provider response. Kept only
	// for durable strategies; a durable turn without one records
	// ModeReplay.
	Cursor string
	// LoopMessages counts the messages a turn-local loop accumulated; kept
	// only for turn-local strategies.
	LoopMessages int
	// InputTokens is the input tokens of the turn's last provider call as
	// the provider reported them, nil if it did not.
	InputTokens *int64
	// ContextLimit is the model's context window in tokens, 0 if unknown.
	ContextLimit int
}

// NewEnvelope builds the envelope of a completed turn at now (the caller's
// clock): the mode from the API's strategy, the cursor only for durable
// modes, the loop count only for turn-local ones, and context figures when
// the provider reported input tokens or the model's limit is known.
func NewEnvelope(c Completion, now time.Time) *Envelope {
	e := &Envelope{
		SchemaVersion:    SchemaVersion,
		Provider:         c.Provider,
		ModelName:        c.Model,
		SystemPromptHash: c.SystemPromptHash,
		ToolsetHash:      c.ToolsetHash,
	}
	switch s := StrategyFor(c.API); {
	case s.SupportsDurableCursor && c.Cursor != "":
		e.Mode, e.Cursor = s.DurableMode, c.Cursor
	case s.Strategy == provider.ContinueTurnLocal:
		e.Mode, e.LoopMessages = ModeStatelessLoop, max(c.LoopMessages, 0)
	default:
		e.Mode = ModeReplay
	}
	if c.InputTokens != nil || c.ContextLimit > 0 {
		e.Context = &ContextFigures{ContextLimit: max(c.ContextLimit, 0), LastUpdatedAt: now.UTC()}
		if c.InputTokens != nil {
			n := max(*c.InputTokens, 0)
			e.Context.ProviderReportedInputTokens = &n
		}
	}
	return e
}

package continuation

import "github.com/turnstream/turnstream/internal/provider"

// Strategy is how a wire API carries a conversation from one turn to the
// next.
type Strategy string

// Strategies.
const (
	// StrategyDurableCursor: the provider keeps the conversation and hands
	// back a cursor that the next turn sends instead of the history
	// (Responses previous_response_id).
	StrategyDurableCursor Strategy = "durable-cursor"
	// StrategyReplay: the provider is stateless between calls; every turn
	// replays the history (Chat Completions).
	StrategyReplay Strategy = "replay"
	// StrategyTurnLocal: the provider accumulates state within one tool
	// loop but keeps nothing across turns (Anthropic Messages).
	StrategyTurnLocal Strategy = "turn-local"
)

// Envelope modes: the wire mode a durable cursor belongs to, or the kind of
// state a cursorless envelope carries.
const (
	// ModeResponses is the durable mode of the Responses API.
	ModeResponses = "responses"
	// ModeReplay marks an envelope of a replay turn: context figures only.
	ModeReplay = "replay"
	// ModeStatelessLoop marks an envelope of a turn-local turn: a count of
	// loop messages, never carried to the next turn.
	ModeStatelessLoop = "stateless-loop"
)

// apiAnthropicMessages is the Anthropic Messages API. No adapter speaks it
// yet; it belongs in internal/provider's API constants when one does.
const apiAnthropicMessages = "anthropic_messages"

// Entry is the continuation strategy of one wire API.
type Entry struct {
	// API is the wire API (provider.APIResponses, ...).
	API string
	// Strategy is how the API continues a conversation.
	Strategy Strategy
	// SupportsDurableCursor reports whether a cursor from this API can be
	// sent on the next turn.
	SupportsDurableCursor bool
	// DurableMode is the wire mode of the cursor (ModeResponses), "" for
	// APIs without one.
	DurableMode string
}

// Mode returns the envelope mode a turn on e's API records: its durable
// mode, ModeReplay or ModeStatelessLoop.
func (e Entry) Mode() string {
	switch e.Strategy {
	case StrategyDurableCursor:
		return e.DurableMode
	case StrategyTurnLocal:
		return ModeStatelessLoop
	}
	return ModeReplay
}

var strategies = map[string]Entry{
	provider.APIResponses:    {Strategy: StrategyDurableCursor, SupportsDurableCursor: true, DurableMode: ModeResponses},
	provider.APIOpenAIChat:   {Strategy: StrategyReplay},
	provider.APIDeepSeekChat: {Strategy: StrategyReplay},
	provider.APIScripted:     {Strategy: StrategyReplay},
	apiAnthropicMessages:     {Strategy: StrategyTurnLocal},
}

// StrategyFor returns the continuation strategy of a wire API. An API
// without an entry replays: replay is correct for every provider, only
// dearer.
func StrategyFor(api string) Entry {
	e, ok := strategies[api]
	if !ok {
		e = Entry{Strategy: StrategyReplay}
	}
	e.API = api
	return e
}

package continuation

import (
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/apis"
)

// Strategy is how a wire API carries a conversation from one turn to the
// next, as its descriptor declares (provider.API.Continuation).
type Strategy = provider.Continuation

// Envelope modes: the wire mode a durable cursor belongs to, or the kind of
// state a cursorless envelope carries.
const (
	// ModeReplay marks an envelope of a replay turn: context figures only.
	ModeReplay = "replay"
	// ModeStatelessLoop marks an envelope of a turn-local turn: a count of
	// loop messages, never carried to the next turn.
	ModeStatelessLoop = "stateless-loop"
)

// Entry is the continuation strategy of one wire API.
type Entry struct {
	// API is the wire API's name.
	API string
	// Strategy is how the API continues a conversation.
	Strategy Strategy
	// SupportsDurableCursor reports whether a cursor from this API can be
	// sent on the next turn.
	SupportsDurableCursor bool
	// DurableMode is the wire mode of the cursor (the API's CursorMode),
	// "" for APIs without one.
	DurableMode string
}

// Mode returns the envelope mode a turn on e's API records: its durable
// mode, ModeReplay or ModeStatelessLoop.
func (e Entry) Mode() string {
	switch e.Strategy {
	case provider.ContinueDurableCursor:
		return e.DurableMode
	case provider.ContinueTurnLocal:
		return ModeStatelessLoop
	}
	return ModeReplay
}

// StrategyFor returns the continuation strategy of a wire API, from its
// descriptor. An unknown API replays: replay is correct for every
// provider, only dearer.
func StrategyFor(api string) Entry {
	e := Entry{API: api, Strategy: provider.ContinueReplay}
	if a, ok := apis.Lookup(api); ok && a.Continuation != "" {
		e.Strategy = a.Continuation
		e.SupportsDurableCursor = a.Continuation == provider.ContinueDurableCursor && a.CursorMode != ""
		e.DurableMode = a.CursorMode
	}
	return e
}

package continuation

// Action is what the next turn does with the stored state.
type Action string

// Actions.
const (
	// ContinueWithCursor: send the cursor and only the new input.
	ContinueWithCursor Action = "continue_with_cursor"
	// DegradeToReplay: a cursor exists but may not be used; replay the
	// history and say so (a continuation_degraded event).
	DegradeToReplay Action = "degrade_to_replay"
	// StartReplay: there is no cursor to continue; replay the history, the
	// normal path of cursorless providers.
	StartReplay Action = "start_replay"
)

// Reason is the coarse reason of a decision, safe for events and logs.
type Reason string

// Reasons. A ContinueWithCursor decision has none.
const (
	// ReasonNoState: nothing was stored.
	ReasonNoState Reason = "no_state"
	// ReasonStatelessLoop: the state is a turn-local loop's, which never
	// crosses turns.
	ReasonStatelessLoop Reason = "stateless_loop"
	// ReasonNoCursor: the state is a replay turn's context figures, with
	// no cursor.
	ReasonNoCursor Reason = "no_cursor"
	// ReasonProviderChanged: the cursor belongs to another provider.
	ReasonProviderChanged Reason = "provider_changed"
	// ReasonModelChanged: the cursor belongs to another model.
	ReasonModelChanged Reason = "model_changed"
	// ReasonModeChanged: the target's API no longer speaks the cursor's
	// mode.
	ReasonModeChanged Reason = "mode_changed"
	// ReasonSystemPromptChanged: the system prompt changed since the cursor.
	ReasonSystemPromptChanged Reason = "system_prompt_changed"
	// ReasonToolsetChanged: the offered tools changed since the cursor.
	ReasonToolsetChanged Reason = "toolset_changed"
	// ReasonNoCursorSupport: everything matches, but the target may not
	// send cursors (its StatefulContinuation capability is off).
	ReasonNoCursorSupport Reason = "no_cursor_support"
	// ReasonCursorLost: the provider no longer has the cursor's
	// conversation (OnCursorLoss).
	ReasonCursorLost Reason = "cursor_lost"
)

// Decision is the continuation decision of one turn.
type Decision struct {
	Action Action
	// Reason is why the turn replays; empty for ContinueWithCursor.
	Reason Reason
	// Cursor is the cursor to send; set only for ContinueWithCursor.
	Cursor string
}

// Decide decides how the turn about to run on cur continues from the stored
// envelope e (nil: no state):
//
//   - no state: StartReplay (no_state);
//   - a turn-local envelope: StartReplay (stateless_loop);
//   - a replay envelope (context figures only): StartReplay (no_cursor);
//   - a durable envelope that does not match cur: DegradeToReplay with the
//     first mismatch's reason (provider, model, mode, system prompt,
//     toolset);
//   - a matching durable envelope on a target that may not send cursors:
//     DegradeToReplay (no_cursor_support);
//   - otherwise ContinueWithCursor with the envelope's cursor.
func Decide(e *Envelope, cur Current) Decision {
	switch {
	case e == nil:
		return Decision{Action: StartReplay, Reason: ReasonNoState}
	case e.Mode == ModeStatelessLoop:
		return Decision{Action: StartReplay, Reason: ReasonStatelessLoop}
	case !e.Durable():
		return Decision{Action: StartReplay, Reason: ReasonNoCursor}
	}
	if m := Validate(e, cur); len(m) > 0 {
		return Decision{Action: DegradeToReplay, Reason: m[0].Reason()}
	}
	if cur.CursorDisabled || !StrategyFor(cur.API).SupportsDurableCursor {
		return Decision{Action: DegradeToReplay, Reason: ReasonNoCursorSupport}
	}
	return Decision{Action: ContinueWithCursor, Cursor: e.Cursor}
}

// DecidePersistence reports whether the envelope a turn completed with is
// stored for the next turn. False means the turn leaves no state: the
// caller clears what was stored, never keeps an older envelope, since a
// cursor from before this turn no longer covers the history.
//
//   - a durable envelope (with its cursor) is stored;
//   - a turn-local (stateless-loop) envelope is not: its loop state ends
//     with the turn;
//   - a replay envelope is stored when it carries context figures, so the
//     figures survive for display and compaction warnings and the stored
//     slot stops pointing at an older provider's cursor; without figures
//     there is nothing worth storing.
func DecidePersistence(e *Envelope) bool {
	switch {
	case e == nil, e.Mode == ModeStatelessLoop:
		return false
	case e.Durable():
		return true
	}
	return e.Mode == ModeReplay && e.Context != nil
}

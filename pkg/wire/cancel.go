package wire

// Cancel asks the workers to stop a running turn of a session. It is
// published with core NATS (no stream) on Subjects.Cancel(session). An empty
// body or an empty TurnID cancels whichever turn of the session is running.
type Cancel struct {
	TurnID string `json:"turn_id,omitempty"`
}

// Package inspect reads what the streams hold of a session or of one of its
// turns and lays it out as a timeline, for `turnstream inspect`: the steps,
// each provider attempt with the marker that ended it (completed, retrying,
// failed), the tool calls with their durations, the messages, every event,
// the usage and the outcome.
//
// It reads only what a client may read (TURN_CHUNKS, TURN_MESSAGES and
// TURN_EVENTS), with batch direct gets (internal/directget): it creates no
// consumer and writes nothing. It never shows message content, tool
// arguments or results: only roles, sizes, names, counts and outcomes.
// Building the timeline from records is pure (BuildTurn, BuildSession);
// reading them is Reader's.
package inspect

package wire

import (
	"regexp"
	"strings"
)

// DefaultPrefix is the first token of every turnstream subject.
const DefaultPrefix = "turn"

// Stream names of the public topology.
const (
	StreamSubmit = "TURN_SUBMIT"
	StreamChunks = "TURN_CHUNKS"
	// StreamRaw holds the provider's raw frames (RawFrame): workers and
	// operators read it, clients never do.
	StreamRaw      = "TURN_RAW"
	StreamMessages = "TURN_MESSAGES"
	StreamEvents   = "TURN_EVENTS"
	StreamTools    = "TURN_TOOLS"
	StreamResults  = "TURN_RESULTS"
	StreamDead     = "TURN_DEAD"
)

// Header names set on published records.
const (
	HeaderContentType = "Content-Type"
	// HeaderStep, HeaderAttempt and HeaderSeq locate a chunk or a raw
	// frame in its turn: the loop step, the provider attempt within that
	// step (1-based) and the record's position within the attempt
	// (1-based). A frame's chunk and its raw frame carry the same three.
	HeaderStep    = "Turn-Step"
	HeaderAttempt = "Turn-Attempt"
	HeaderSeq     = "Turn-Seq"
	// HeaderProvider, HeaderModel and HeaderEvent carry a raw frame's
	// target and SSE event name (RawFrame.Header).
	HeaderProvider = "Turn-Provider"
	HeaderModel    = "Turn-Model"
	HeaderEvent    = "Turn-Event"
	// HeaderRequest is set on a session-log message a worker appended
	// under a turn's lease: the submit-stream sequence of the request
	// that ran the turn.
	HeaderRequest = "Turn-Request"
	// HeaderRejectReason is set on a request copied to the dead-letter subject.
	HeaderRejectReason = "Turn-Reject-Reason"
	// HeaderRejectField is set on a dead-letter copy whose rejection names
	// a field: ValidationError.Field, the path of the offending key (ASCII,
	// at most 128 bytes).
	HeaderRejectField = "Turn-Reject-Field"
	// HeaderDeadTruncated is set on a dead-letter copy whose request was too
	// large to copy whole with its headers: its value is the request's full
	// size in bytes, and the body holds its first bytes.
	HeaderDeadTruncated = "Turn-Dead-Truncated"
	// HeaderCancelError is set on a worker's answer to a Cancel sent as a
	// request when the worker could not store the cancel; its value is
	// CancelNotStored. An answer without it confirms the cancel.
	HeaderCancelError = "Turn-Cancel-Error"
)

var tokenRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// ValidToken reports whether s can be used as a session, turn or tool token in
// a subject: 1 to 128 characters of [A-Za-z0-9_-].
func ValidToken(s string) bool { return tokenRE.MatchString(s) }

// Subjects builds the subject names of one deployment. The zero value uses
// DefaultPrefix.
type Subjects struct {
	// Prefix is the first token of every subject. Default "turn".
	Prefix string
}

func (s Subjects) p() string {
	if s.Prefix == "" {
		return DefaultPrefix
	}
	return s.Prefix
}

// Submit is where clients publish a TurnRequest for session.
func (s Subjects) Submit(session string) string { return s.p() + ".submit." + session }

// Cancel is the core NATS subject that cancels session's running turn.
func (s Subjects) Cancel(session string) string { return s.p() + ".cancel." + session }

// Chunk carries the normalized chunks of one turn (deltas and attempt
// markers; never the provider's bytes).
func (s Subjects) Chunk(session, turn string) string {
	return s.p() + ".chunk." + session + "." + turn
}

// Raw carries the provider's raw frames of one turn (RawFrame), on
// TURN_RAW: only workers and operators read it, and nothing republishes
// it.
func (s Subjects) Raw(session, turn string) string {
	return s.p() + ".raw." + session + "." + turn
}

// Message is session's log of finalized messages.
func (s Subjects) Message(session string) string { return s.p() + ".message." + session }

// Event carries session's audit SessionEvents.
func (s Subjects) Event(session string) string { return s.p() + ".event." + session }

// LiveChunk is where TURN_CHUNKS republishes every chunk of one turn it
// stored, with the stream's Nats-Sequence and Nats-Last-Sequence headers
// (the follow contract: followers subscribe here, never to Chunk, and fill
// gaps with direct gets).
func (s Subjects) LiveChunk(session, turn string) string {
	return s.p() + ".live.chunk." + session + "." + turn
}

// LiveMessage is where TURN_MESSAGES republishes every message of session's
// log it stored, as LiveChunk does for chunks.
func (s Subjects) LiveMessage(session string) string { return s.p() + ".live.message." + session }

// LiveEvent is where TURN_EVENTS republishes every SessionEvent of session
// it stored, as LiveChunk does for chunks.
func (s Subjects) LiveEvent(session string) string { return s.p() + ".live.event." + session }

// Tool is where calls of the named tool are dispatched.
func (s Subjects) Tool(name string) string { return s.p() + ".tool." + name }

// Result is where tool workers publish results for session's calls.
func (s Subjects) Result(session string) string { return s.p() + ".result." + session }

// Dead is where rejected requests of session are copied.
func (s Subjects) Dead(session string) string { return s.p() + ".dead." + session }

// Service is where the NATS service of a role answers endpoint, core
// NATS request-reply outside every stream: Service("worker", "config") is
// "turn.svc.worker.config", the configuration summary of a worker (the
// turnstream-worker and turnstream-tools services, internal/discovery).
// Operators call these subjects; clients may not.
func (s Subjects) Service(role, endpoint string) string {
	return s.p() + ".svc." + role + "." + endpoint
}

// All returns the wildcard subject of a kind ("submit", "chunk", ...),
// matching every session (and turn, for chunks and raw frames).
func (s Subjects) All(kind string) string { return s.p() + "." + kind + ".>" }

// ParseSubmit returns the session token of a submit subject. It returns a
// *ValidationError with ReasonInvalidSubject (and Field "subject") when subj
// is not exactly <prefix>.submit.<session>: another prefix or kind, a
// missing or empty session token, extra tokens ("turn.submit.a.b"), or a
// session token that is not a ValidToken (no request could match it).
func (s Subjects) ParseSubmit(subj string) (string, error) {
	prefix := s.p() + ".submit."
	session, ok := strings.CutPrefix(subj, prefix)
	switch {
	case !ok:
		return "", invalid(ReasonInvalidSubject, "subject", "not a %s<session> subject", prefix)
	case session == "":
		return "", invalid(ReasonInvalidSubject, "subject", "no session token")
	case strings.Contains(session, "."):
		return "", invalid(ReasonInvalidSubject, "subject", "extra tokens after the session token")
	case !ValidToken(session):
		return "", invalid(ReasonInvalidSubject, "subject", "session token must be 1-128 characters of [A-Za-z0-9_-]")
	}
	return session, nil
}

// SessionOf returns the session token of a submit, cancel, chunk, raw,
// message, event, result or dead subject, or "" if subj is not one of them.
func (s Subjects) SessionOf(subj string) string {
	rest, ok := strings.CutPrefix(subj, s.p()+".")
	if !ok {
		return ""
	}
	kind, rest, _ := strings.Cut(rest, ".")
	switch kind {
	case "submit", "cancel", "chunk", "raw", "message", "event", "result", "dead":
		session, _, _ := strings.Cut(rest, ".")
		return session
	}
	return ""
}

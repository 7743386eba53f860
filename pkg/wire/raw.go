package wire

import (
	"strconv"
	"strings"
)

// RawFrame is one provider frame exactly as it arrived, stored on
// Subjects.Raw(SessionID, TurnID) in TURN_RAW, which only workers and
// operators read (debugging, offline replay): the record's body is Bytes,
// byte for byte, with no envelope; its headers (RawFrame.Header) carry the
// rest. A frame and the chunk of its normalized delta share Step, Attempt
// and Seq. Attempt end markers are chunks only: they carry no provider
// bytes.
type RawFrame struct {
	// SessionID and TurnID are the subject's tokens, not headers.
	SessionID string
	TurnID    string
	// Step, Attempt and Seq locate the frame as they locate its chunk
	// (HeaderStep, HeaderAttempt, HeaderSeq): the loop step (from 0), the
	// provider attempt within it (from 1) and the frame's position within
	// the attempt (from 1).
	Step    int
	Attempt int
	Seq     int
	// Provider and Model are the attempt's target (HeaderProvider,
	// HeaderModel); Event is the SSE event name, when the provider sent
	// one (HeaderEvent). A header is left out when its value is empty.
	Provider string
	Model    string
	Event    string
	// Bytes is the frame's data as the provider sent it.
	Bytes []byte
}

// Header returns the headers of f's record; its body is f.Bytes as they
// are. Provider, Model and Event are written as they are when they are
// printable ASCII without surrounding spaces and do not start with a
// double quote, and otherwise as a double-quoted string with Go's escapes
// (strconv.QuoteToASCII), so any value reads back unchanged whatever a NATS
// client does to header values. It fails with a *ValidationError (Field
// the header) when f could not be read back: a negative step, an attempt
// or seq below 1, or any of them above 2^31-1.
func (f *RawFrame) Header() (map[string][]string, error) {
	if err := f.checkPosition(); err != nil {
		return nil, err
	}
	h := make(map[string][]string, 6)
	h[HeaderStep] = []string{strconv.Itoa(f.Step)}
	h[HeaderAttempt] = []string{strconv.Itoa(f.Attempt)}
	h[HeaderSeq] = []string{strconv.Itoa(f.Seq)}
	if f.Provider != "" {
		h[HeaderProvider] = []string{headerValue(f.Provider)}
	}
	if f.Model != "" {
		h[HeaderModel] = []string{headerValue(f.Model)}
	}
	if f.Event != "" {
		h[HeaderEvent] = []string{headerValue(f.Event)}
	}
	return h, nil
}

// maxCount bounds step, attempt and seq: what a 32-bit reader can hold.
const maxCount = 1<<31 - 1

func (f *RawFrame) checkPosition() error {
	switch {
	case f.Step < 0 || f.Step > maxCount:
		return invalid(ReasonMalformed, HeaderStep, "step %d out of range", f.Step)
	case f.Attempt < 1 || f.Attempt > maxCount:
		return invalid(ReasonMalformed, HeaderAttempt, "attempt %d out of range", f.Attempt)
	case f.Seq < 1 || f.Seq > maxCount:
		return invalid(ReasonMalformed, HeaderSeq, "seq %d out of range", f.Seq)
	}
	return nil
}

// ParseRawFrame reads back a record of TURN_RAW: the session and turn from
// its subject (s.Raw(session, turn)), the rest from its headers (others,
// such as the server's, are ignored), Bytes from body, which is not copied.
// A subject that is not a raw subject of s with two valid tokens is a
// *ValidationError with ReasonInvalidSubject; a missing or repeated step,
// attempt or seq header, a repeated provider, model or event header, or a
// value that does not parse or is out of range is a *ValidationError with
// ReasonMalformed whose Field names the header.
func (s Subjects) ParseRawFrame(subject string, header map[string][]string, body []byte) (RawFrame, error) {
	var f RawFrame
	var err error
	if f.SessionID, f.TurnID, err = s.parseRaw(subject); err != nil {
		return RawFrame{}, err
	}
	for _, n := range []struct {
		name string
		v    *int
	}{{HeaderStep, &f.Step}, {HeaderAttempt, &f.Attempt}, {HeaderSeq, &f.Seq}} {
		v, ok, err := single(header, n.name)
		if err != nil {
			return RawFrame{}, err
		}
		if !ok {
			return RawFrame{}, invalid(ReasonMalformed, n.name, "missing")
		}
		u, perr := strconv.ParseUint(v, 10, 31)
		if perr != nil {
			return RawFrame{}, invalid(ReasonMalformed, n.name, "%q is not a count", clipValue(v))
		}
		*n.v = int(u)
	}
	if err := f.checkPosition(); err != nil {
		return RawFrame{}, err
	}
	for _, t := range []struct {
		name string
		v    *string
	}{{HeaderProvider, &f.Provider}, {HeaderModel, &f.Model}, {HeaderEvent, &f.Event}} {
		v, ok, err := single(header, t.name)
		if err != nil {
			return RawFrame{}, err
		}
		if !ok {
			continue
		}
		if *t.v, err = parseHeaderValue(t.name, v); err != nil {
			return RawFrame{}, err
		}
	}
	f.Bytes = body
	return f, nil
}

// parseRaw returns the session and turn tokens of a raw subject.
func (s Subjects) parseRaw(subj string) (session, turn string, err error) {
	prefix := s.p() + ".raw."
	rest, ok := strings.CutPrefix(subj, prefix)
	if !ok {
		return "", "", invalid(ReasonInvalidSubject, "subject", "not a %s<session>.<turn> subject", prefix)
	}
	session, turn, ok = strings.Cut(rest, ".")
	switch {
	case !ok:
		return "", "", invalid(ReasonInvalidSubject, "subject", "no turn token")
	case strings.Contains(turn, "."):
		return "", "", invalid(ReasonInvalidSubject, "subject", "extra tokens after the turn token")
	case !ValidToken(session) || !ValidToken(turn):
		return "", "", invalid(ReasonInvalidSubject, "subject", "session and turn tokens must be 1-128 characters of [A-Za-z0-9_-]")
	}
	return session, turn, nil
}

// single returns the one value of header name.
func single(h map[string][]string, name string) (string, bool, error) {
	vs := h[name]
	switch len(vs) {
	case 0:
		return "", false, nil
	case 1:
		return vs[0], true, nil
	}
	return "", false, invalid(ReasonMalformed, name, "given %d times", len(vs))
}

// headerValue writes s so that parseHeaderValue reads it back unchanged.
func headerValue(s string) string {
	if plainHeaderValue(s) {
		return s
	}
	return strconv.QuoteToASCII(s)
}

// plainHeaderValue reports whether s survives a NATS header as it is:
// printable ASCII, no surrounding spaces (clients trim them), and not
// starting with the quote that marks an escaped value.
func plainHeaderValue(s string) bool {
	if s == "" || s[0] == ' ' || s[0] == '"' || s[len(s)-1] == ' ' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func parseHeaderValue(name, v string) (string, error) {
	if !strings.HasPrefix(v, `"`) {
		return v, nil
	}
	s, err := strconv.Unquote(v)
	if err != nil {
		return "", invalid(ReasonMalformed, name, "%q is not a quoted string", clipValue(v))
	}
	return s, nil
}

// clipValue bounds a header value quoted in an error.
func clipValue(v string) string {
	const limit = 64
	if len(v) > limit {
		return v[:limit] + "..."
	}
	return v
}

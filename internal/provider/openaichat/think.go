package openaichat

import "strings"

const (
	openThink  = "<think>"
	closeThink = "</think>"
)

// thinkSplitter separates reasoning that a model writes inline as
// <think>...</think> at the start of its content, tags possibly split across
// chunks. Content that does not start with <think> (after whitespace) passes
// through untouched, so a literal tag later in an answer stays text.
type thinkSplitter struct {
	state   uint8 // 0 undecided, 1 inside think, 2 plain text, 3 dropping newlines after </think>
	pending string
}

func (s *thinkSplitter) feed(in string, text, reasoning func(string)) {
	if s.state == 2 {
		text(in)
		return
	}
	buf := s.pending + in
	s.pending = ""
	for buf != "" {
		switch s.state {
		case 0:
			trimmed := strings.TrimLeft(buf, " \t\r\n")
			switch {
			case strings.HasPrefix(trimmed, openThink):
				s.state = 1
				buf = trimmed[len(openThink):]
			case strings.HasPrefix(openThink, trimmed):
				s.pending = buf // could still become <think>
				return
			default:
				s.state = 2
				text(buf)
				return
			}
		case 1:
			if i := strings.Index(buf, closeThink); i >= 0 {
				reasoning(buf[:i])
				// The newlines after </think> are dropped even when they
				// arrive in later chunks.
				s.state = 3
				buf = buf[i+len(closeThink):]
				continue
			}
			// keep a suffix that could start </think>
			keep := 0
			for k := min(len(closeThink)-1, len(buf)); k > 0; k-- {
				if strings.HasPrefix(closeThink, buf[len(buf)-k:]) {
					keep = k
					break
				}
			}
			reasoning(buf[:len(buf)-keep])
			s.pending = buf[len(buf)-keep:]
			return
		case 2:
			text(buf)
			return
		case 3:
			if buf = strings.TrimLeft(buf, "\r\n"); buf != "" {
				s.state = 2
			}
		}
	}
}

// flush releases anything held back at the end of the stream.
func (s *thinkSplitter) flush(text, reasoning func(string)) {
	if s.pending == "" {
		return
	}
	p := s.pending
	s.pending = ""
	if s.state == 1 {
		reasoning(p)
	} else {
		text(p)
	}
}

package openaiwire

import (
	"bytes"
	"io"

	"github.com/turnstream/turnstream/internal/provider"
)

// BoundSSE wraps an event-stream body so that the decoder reading it never
// holds more than the limits allow. It counts the bytes since the last
// newline (a line, a CR before its newline included), the bytes of the
// lines since the last blank line (an event: every line of it, comments
// too, newlines not counted, so the decoder's data for it is never more)
// and every byte (the stream), and fails with a RESPONSE_TOO_LARGE
// *provider.Failure (Reason sse_line_bytes, sse_event_bytes or
// stream_bytes) as soon as one passes its limit. The read that crosses
// returns only the bytes before the crossing, so no line or event handed
// on is over its limit, and the crossing line is never completed: its
// event is never dispatched. A blank line is "\n" or "\r\n", as openai-go's
// decoder splits lines. Zero limits take the provider defaults.
func BoundSSE(rc io.ReadCloser, l provider.Limits) io.ReadCloser {
	l = l.WithDefaults()
	return &boundedReader{rc: rc, maxLine: l.MaxLineBytes, maxEvent: l.MaxEventBytes, maxStream: l.MaxStreamBytes}
}

type boundedReader struct {
	rc                  io.ReadCloser
	maxLine, maxEvent   int
	maxStream           int
	line, event, stream int
	cr                  bool // the current line's last byte is '\r'
	err                 error
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	if k, crossed := b.scan(p[:n]); crossed != nil {
		b.err = crossed
		return k, crossed
	}
	return n, err
}

// scan counts buf; on a crossing it returns how many bytes of buf precede
// it and the failure.
func (b *boundedReader) scan(buf []byte) (int, error) {
	if over := b.stream + len(buf) - b.maxStream; over > 0 {
		// Count the lines of what fits, then stop at the stream's end.
		k, err := b.scan(buf[:len(buf)-over])
		if err != nil {
			return k, err
		}
		return k, provider.TooLarge(provider.LimitStreamBytes)
	}
	b.stream += len(buf)
	done := 0
	for done < len(buf) {
		rest := buf[done:]
		i := bytes.IndexByte(rest, '\n')
		seg := rest
		if i >= 0 {
			seg = rest[:i]
		}
		if len(seg) > 0 {
			if room := min(b.maxLine-b.line, b.maxEvent-b.event); len(seg) > room {
				if b.maxLine-b.line <= b.maxEvent-b.event {
					return done + room, provider.TooLarge(provider.LimitLineBytes)
				}
				return done + room, provider.TooLarge(provider.LimitEventBytes)
			}
			b.line += len(seg)
			b.event += len(seg)
			b.cr = seg[len(seg)-1] == '\r'
		}
		if i < 0 {
			return len(buf), nil
		}
		done += len(seg) + 1 // and the newline
		if b.line == 0 || b.line == 1 && b.cr {
			b.event = 0 // a blank line ends the event
		}
		b.line, b.cr = 0, false
	}
	return len(buf), nil
}

func (b *boundedReader) Close() error { return b.rc.Close() }

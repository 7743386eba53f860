package openaiwire

import "io"

// Terminate wraps an SSE body so that a stream ending with a complete line
// but without the blank line that dispatches an SSE event ("data: [DONE]\n"
// then EOF) still dispatches it; a stream that ends mid-line stays
// truncated.
func Terminate(rc io.ReadCloser) io.ReadCloser { return &terminatedReader{rc: rc} }

type terminatedReader struct {
	rc         io.ReadCloser
	last, prev byte
	tail       []byte
	eof        bool
}

func (r *terminatedReader) Read(p []byte) (int, error) {
	if r.eof {
		if len(r.tail) == 0 {
			return 0, io.EOF
		}
		n := copy(p, r.tail)
		r.tail = r.tail[n:]
		return n, nil
	}
	n, err := r.rc.Read(p)
	if n > 0 {
		if n >= 2 {
			r.prev, r.last = p[n-2], p[n-1]
		} else {
			r.prev, r.last = r.last, p[0]
		}
	}
	if err == io.EOF {
		r.eof = true
		if r.last == '\n' && r.prev != '\n' {
			r.tail = []byte("\n")
		}
		if n > 0 {
			return n, nil
		}
		return r.Read(p)
	}
	return n, err
}

func (r *terminatedReader) Close() error { return r.rc.Close() }

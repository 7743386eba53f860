package responses

import (
	"context"
	"io"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaiwire"
)

// readBody reads a non-streamed answer (at most MaxBodyBytes), relays it as
// one frame with its delta, and translates it through t like a stream's
// terminal event. Bytes arriving reset the idle clock. A failure carries
// the answer's HTTP status.
func readBody(ctx context.Context, res *openaiwire.Response, t *Translator, sink provider.Sink) (*assemble.Response, error) {
	b, err := io.ReadAll(io.LimitReader(progressReader{r: res.HTTP.Body, progress: res.Progress}, MaxBodyBytes+1))
	if err != nil {
		return nil, endFailure(ctx, res, err, "")
	}
	if len(b) > MaxBodyBytes {
		f := provider.Fail(provider.ClassMalformed, "response body too large", nil)
		f.Status = res.HTTP.StatusCode
		return nil, f
	}
	ferr := t.Body(b)
	if err := sink(provider.Frame{Raw: b, Delta: t.Asm.TakeDelta()}); err != nil {
		return nil, err
	}
	if ferr == nil {
		return finalize(t)
	}
	f := provider.AsFailure(ferr)
	f.Status = res.HTTP.StatusCode
	return nil, f
}

// progressReader calls progress whenever a read returns bytes.
type progressReader struct {
	r        io.Reader
	progress func()
}

func (p progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.progress()
	}
	return n, err
}

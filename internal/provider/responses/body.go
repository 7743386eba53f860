package responses

import (
	"context"
	"errors"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaiwire"
)

// readBody reads a non-streamed answer (at most the attempt's
// MaxEventBytes: it is relayed as one frame), relays it as one frame with
// its delta, and translates it through t like a stream's terminal event.
// Bytes arriving reset the idle clock. A failure carries the answer's HTTP
// status.
func readBody(ctx context.Context, res *openaiwire.Response, t *Translator, sink provider.Sink) (*assemble.Response, error) {
	b, err := res.ReadBody()
	if err != nil {
		var f *provider.Failure
		if !errors.As(err, &f) { // not over the limit: the read broke
			return nil, endFailure(ctx, res, err, "")
		}
		f.Status = res.HTTP.StatusCode
		return nil, f
	}
	ferr := t.Body(b)
	if err := t.Asm.Err(); err != nil {
		f := provider.AsFailure(err)
		f.Status = res.HTTP.StatusCode
		return nil, f
	}
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

package openaichat

import (
	"context"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaiwire"
)

// readBody reads a 2xx answer that is not an event stream, whole (at most
// the attempt's MaxEventBytes: it is relayed as one frame), and translates
// it as a non-streamed completion from a server that ignored stream: true,
// by the same rules as a stream. It relays the body with its delta unless
// it crossed a limit. An error object is an in-band failure, anything but
// a completion is malformed; a failure carries the answer's HTTP status.
func readBody(ctx context.Context, res *openaiwire.Response, sink provider.Sink) (*assemble.Response, error) {
	withStatus := func(f *provider.Failure) *provider.Failure {
		f.Status = res.HTTP.StatusCode
		return f
	}
	b, err := res.ReadBody()
	if err != nil {
		return nil, withStatus(res.Interrupted(ctx, "body", err))
	}
	t := NewTranslator()
	t.Asm.SetLimits(res.Limits().Content())
	ferr := t.Body(b)
	if err := t.Asm.Err(); err != nil {
		return nil, withStatus(provider.AsFailure(err))
	}
	if err := sink(provider.Frame{Raw: b, Delta: t.Asm.TakeDelta()}); err != nil {
		return nil, err
	}
	if ferr != nil {
		return nil, withStatus(provider.AsFailure(ferr))
	}
	return t.Asm.Response(), nil
}

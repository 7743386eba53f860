package anthropic

import (
	"bytes"
	"context"
	"net/http"

	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaiwire"
)

// readEvents frames the body with the SDK's SSE decoder, reading through
// openaiwire.BoundSSE (lines, events and the stream within the attempt's
// limits), translates each event, relays it to sink with its delta, and
// returns at message_stop. Every event but a ping resets the idle clock;
// SSE comments are not events. An event with no data carries nothing and
// is neither relayed nor progress.
func readEvents(ctx context.Context, r *openaiwire.Response, sink provider.Sink) (*assemble.Response, error) {
	t := NewTranslator()
	t.SetLimits(r.Limits().Content())
	dec := ssestream.NewDecoder(&http.Response{Header: r.HTTP.Header, Body: openaiwire.BoundSSE(openaiwire.Terminate(r.HTTP.Body), r.Limits())})
	for dec.Next() {
		ev := dec.Event()
		data := bytes.TrimSuffix(ev.Data, []byte("\n"))
		if len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		progress, ferr := t.Event(ev.Type, data)
		if progress {
			r.Progress()
		}
		if err := t.Err(); err != nil {
			return nil, provider.AsFailure(err) // the frame that crossed a limit is not relayed
		}
		if err := sink(provider.Frame{Raw: data, Event: ev.Type, Delta: t.TakeDelta()}); err != nil {
			return nil, err
		}
		switch {
		case ferr != nil:
			return nil, ferr
		case t.Reached():
			return finalize(t)
		}
	}
	if f := r.Interrupted(ctx, "stream", dec.Err()); f != nil {
		return nil, f
	}
	return nil, provider.Fail(provider.ClassStreamClosed, "stream ended before message_stop", nil)
}

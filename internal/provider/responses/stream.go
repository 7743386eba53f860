package responses

import (
	"bytes"
	"context"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaiwire"
)

// readEvents feeds an event stream to t event by event, relaying each to
// sink with its delta, and returns at the terminal event. Every event
// resets the idle clock (comments are not events). A "[DONE]" some proxies
// append is not a terminal: the stream ended without one.
func readEvents(ctx context.Context, res *openaiwire.Response, t *Translator, sink provider.Sink) (*assemble.Response, error) {
	events := res.Events()
	for events.Next() {
		ev := events.Event()
		data := ev.Data
		done := bytes.Equal(bytes.TrimSpace(data), []byte("[DONE]"))
		var ferr error
		if !done {
			ferr = t.Event(ev.Type, data)
		}
		if err := t.Asm.Err(); err != nil {
			return nil, provider.AsFailure(err) // the frame that crossed a limit is not relayed
		}
		if err := sink(provider.Frame{Raw: data, Event: ev.Type, Delta: t.Asm.TakeDelta()}); err != nil {
			return nil, err
		}
		switch {
		case ferr != nil:
			return nil, ferr
		case t.Asm.Reached():
			return finalize(t)
		case done:
			return nil, provider.Fail(provider.ClassStreamClosed, "stream ended with [DONE] before a terminal event", nil)
		}
	}
	return nil, endFailure(ctx, res, events.Err(), "stream ended before a terminal event")
}

package responses

import (
	"bytes"
	"context"
	"net/http"

	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaichat"
)

// readEvents feeds an event stream to t event by event, relaying each to
// sink with its delta, and returns at the terminal event. progress is
// called on every event (comments are not events). A "[DONE]" some proxies
// append is not a terminal: the stream ended without one.
func readEvents(ctx context.Context, res *http.Response, t *Translator, progress func(), sink provider.Sink) (*assemble.Response, error) {
	dec := ssestream.NewDecoder(&http.Response{Header: res.Header, Body: openaichat.Terminate(res.Body)})
	for dec.Next() {
		progress()
		ev := dec.Event()
		data := bytes.TrimSuffix(ev.Data, []byte("\n"))
		done := bytes.Equal(bytes.TrimSpace(data), []byte("[DONE]"))
		var ferr error
		if !done {
			ferr = t.Event(ev.Type, data)
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
	return nil, endFailure(ctx, dec.Err(), "stream ended before a terminal event")
}

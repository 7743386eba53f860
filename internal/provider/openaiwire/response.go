package openaiwire

import (
	"bytes"
	"context"
	"mime"
	"net/http"
	"time"

	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/turnstream/turnstream/internal/provider"
)

// Response is an answer whose headers arrived. Its body is read by one
// goroutine, the caller's, which must Close it.
type Response struct {
	// HTTP is the provider's response. Read its Body through Events, or
	// directly calling Progress as bytes arrive; Close closes it.
	HTTP *http.Response

	idle    *time.Timer
	timeout time.Duration
	idled   func() bool // whether the idle clock ended the request
	cancel  context.CancelCauseFunc
}

// EventStream reports whether the answer is a server-sent event stream,
// by its Content-Type.
func (r *Response) EventStream() bool {
	mt, _, _ := mime.ParseMediaType(r.HTTP.Header.Get("Content-Type"))
	return mt == "text/event-stream"
}

// Progress resets the idle clock: the answer made progress.
func (r *Response) Progress() { r.idle.Reset(r.timeout) }

// Close closes the body, stops the idle clock and ends the request.
func (r *Response) Close() error {
	err := r.HTTP.Body.Close()
	r.idle.Stop()
	r.cancel(nil)
	return err
}

// Interrupted classifies why reading the answer stopped before its
// terminal, given ctx (the context Post was given) and the read error, if
// any: TIMEOUT (what+" idle timeout") when the idle clock ran out, ctx's
// error as provider.AsFailure classifies it, TRANSPORT (what+" broken") on
// a read error. It returns nil when none of these happened: the body ended
// cleanly, too soon, which is the caller's to name.
func (r *Response) Interrupted(ctx context.Context, what string, readErr error) *provider.Failure {
	switch {
	case r.idled():
		return provider.Fail(provider.ClassTimeout, what+" idle timeout", errIdle)
	case ctx.Err() != nil:
		return provider.AsFailure(ctx.Err())
	case readErr != nil:
		return provider.Fail(provider.ClassTransport, what+" broken", readErr)
	}
	return nil
}

// Events reads the body as a server-sent event stream with openai-go's
// decoder, the body wrapped by Terminate. Every event resets the idle
// clock; a comment is not an event and does not.
func (r *Response) Events() *Events {
	return &Events{
		dec:      ssestream.NewDecoder(&http.Response{Header: r.HTTP.Header, Body: Terminate(r.HTTP.Body)}),
		progress: r.Progress,
	}
}

// Events iterates over the events of a stream.
type Events struct {
	dec      ssestream.Decoder
	progress func()
}

// Next advances to the next event, reporting false at the end of the
// stream or on a read error (see Err).
func (e *Events) Next() bool {
	if !e.dec.Next() {
		return false
	}
	e.progress()
	return true
}

// Event is the current event: its type (the event: field) and its data,
// without the newline the decoder leaves after the last data line.
func (e *Events) Event() ssestream.Event {
	ev := e.dec.Event()
	ev.Data = bytes.TrimSuffix(ev.Data, []byte("\n"))
	return ev
}

// Err is the read error that ended the stream, nil at a clean end.
func (e *Events) Err() error { return e.dec.Err() }

package openaiwire

import (
	"bytes"
	"context"
	"errors"
	"io"
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
	limits  provider.Limits
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
// error as provider.AsFailure classifies it, the read error itself when it
// is a *provider.Failure (a limit crossed: RESPONSE_TOO_LARGE), TRANSPORT
// (what+" broken") on any other read error. It returns nil when none of
// these happened: the body ended cleanly, too soon, which is the caller's
// to name.
func (r *Response) Interrupted(ctx context.Context, what string, readErr error) *provider.Failure {
	var f *provider.Failure
	switch {
	case r.idled():
		return provider.Fail(provider.ClassTimeout, what+" idle timeout", errIdle)
	case ctx.Err() != nil:
		return provider.AsFailure(ctx.Err())
	case errors.As(readErr, &f):
		return f
	case readErr != nil:
		return provider.Fail(provider.ClassTransport, what+" broken", readErr)
	}
	return nil
}

// Limits are the attempt's limits, read from the context Post was given.
func (r *Response) Limits() provider.Limits { return r.limits }

// Events reads the body as a server-sent event stream with openai-go's
// decoder, the body wrapped by Terminate and bounded by BoundSSE with the
// attempt's limits: a line, an event or a stream over its limit ends the
// events, Err being the RESPONSE_TOO_LARGE failure. Every event resets the
// idle clock; a comment is not an event and does not.
func (r *Response) Events() *Events {
	return &Events{
		dec:      ssestream.NewDecoder(&http.Response{Header: r.HTTP.Header, Body: BoundSSE(Terminate(r.HTTP.Body), r.limits)}),
		progress: r.Progress,
	}
}

// ReadBody reads a body that is not an event stream, whole, resetting the
// idle clock as bytes arrive. A body over the attempt's MaxEventBytes is
// read no further: RESPONSE_TOO_LARGE (body_bytes). A read error is
// returned as is, for Interrupted.
func (r *Response) ReadBody() ([]byte, error) {
	max := r.limits.WithDefaults().MaxEventBytes
	b, err := io.ReadAll(io.LimitReader(progressReader{r: r.HTTP.Body, progress: r.Progress}, int64(max)+1))
	switch {
	case err != nil:
		return nil, err
	case len(b) > max:
		return nil, provider.TooLarge(provider.LimitBodyBytes)
	}
	return b, nil
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

package mockllm

import (
	"net/http"
	"time"
)

// Frame is one thing the server writes in a stream.
type Frame struct {
	// Data is written as "data: <Data>" followed by a blank line.
	Data string
	// Event, if set, is written as "event: <Event>" before the data.
	Event string
	// Comment, if set, is written as ": <Comment>" (a keep-alive) instead.
	Comment string
	// Verbatim, if set, is written exactly as is instead of everything above.
	Verbatim string
	// Delay is waited before the frame, in addition to Response.Latency.
	Delay time.Duration
}

// Response is what the server answers to one request.
type Response struct {
	// Status defaults to 200.
	Status int
	// Header is added to the response headers.
	Header http.Header
	// Body is written for a non-200 status, or for a 200 when Frames is
	// empty and NotStream is set.
	Body string
	// NotStream sends Body with Content-Type application/json even on 200.
	NotStream bool
	// Frames are streamed as server-sent events.
	Frames []Frame
	// Latency is waited before every frame.
	Latency time.Duration
	// Done, when set, ends the stream with "data: [DONE]".
	Done bool
	// DoneWithoutBlankLine writes the final "data: [DONE]" with a single
	// newline.
	DoneWithoutBlankLine bool
	// Stall sends keep-alives for this long before the first frame.
	Stall time.Duration
	// KeepAlive is what a stall writes at every tick, verbatim. Default
	// ": keep-alive\n\n", an SSE comment; PingKeepAlive is Anthropic's.
	KeepAlive string
	// DisconnectAfter > 0 aborts the connection (no clean end of the HTTP
	// body) after that many frames.
	DisconnectAfter int
	// Flood, if set, is hostile output generated as it is written: after
	// Frames and before [DONE], or as the body (FloodBody).
	Flood *Flood
}

// Error returns an HTTP error response with an OpenAI-shaped error body.
func Error(status int, code, message string, header http.Header) *Response {
	body := `{"error":{"message":` + quote(message) + `,"type":` + quote(code) + `,"code":` + quote(code) + `}}`
	return &Response{Status: status, Body: body, Header: header}
}

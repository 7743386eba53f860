package provider

import (
	"context"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/pkg/wire"
)

// Frame is one provider frame as it arrived, with its normalized delta.
type Frame struct {
	// Raw is the frame's data, byte for byte.
	Raw []byte
	// Event is the SSE event name, if the provider sent one.
	Event string
	// Delta is the normalized content of the frame, nil if it carried none.
	Delta *wire.Delta
}

// Sink receives frames as they arrive. An error aborts the attempt.
type Sink func(Frame) error

// Adapter speaks one wire API.
type Adapter interface {
	// Prepare serializes req for model into the request body, as model's
	// capabilities allow (native or flat tool history, reasoning echo). The
	// body is built once per target and step and sent unchanged by every
	// retry.
	Prepare(req *Request, model Model) ([]byte, error)
	// Stream sends body, relays every frame to sink as it arrives, and
	// returns the finalized response once the stream reached its terminal
	// marker. Any other outcome is a *Failure.
	//
	// It enforces LimitsOf(ctx) as the answer arrives, never buffering past
	// them: its assembler gets Limits.Content, and whatever reads the wire
	// bounds lines, events, the stream and any body it reads whole. The
	// frame that crosses a limit is not relayed; the attempt fails with
	// RESPONSE_TOO_LARGE naming the limit.
	Stream(ctx context.Context, body []byte, sink Sink) (*assemble.Response, error)
}

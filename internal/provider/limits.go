package provider

import (
	"context"

	"github.com/turnstream/turnstream/internal/assemble"
)

// Limits bound what one provider attempt may bring in. They are enforced
// while the answer arrives, so nothing is buffered past them:
//
//   - the SSE reader under the event decoder counts line, event and stream
//     bytes (internal/provider/openaiwire), and a non-streamed body or an
//     HTTP error body is read no further than MaxEventBytes;
//   - the assembler counts text, reasoning, tool calls, argument and
//     message bytes (assemble.Limits), in every adapter;
//   - the Executor counts the frames relayed and checks each one's size.
//
// Crossing one fails the attempt with RESPONSE_TOO_LARGE, whose Reason is
// the limit's name (one of the Limit constants). Zero or negative fields
// take the DefaultLimits values.
//
// The fields match internal/config's ResponseLimits one for one, so a
// worker converts its config with provider.Limits(cfg.Limits.Response).
type Limits struct {
	// MaxLineBytes caps one SSE line, its field name included, counted since
	// the last newline. Default 256 KiB.
	MaxLineBytes int
	// MaxEventBytes caps one SSE event: the bytes of its lines since the
	// last blank line (comments included, newlines not counted). It also
	// caps a non-streamed answer's body, an HTTP error body and every
	// frame the Executor relays. Default 256 KiB.
	MaxEventBytes int
	// MaxStreamBytes caps the bytes of one answer's event stream, comments
	// and framing included. Default 64 MiB.
	MaxStreamBytes int
	// MaxTextBytes caps the visible text. Default 512 KiB.
	MaxTextBytes int
	// MaxReasoningBytes caps the reasoning. Default 512 KiB.
	MaxReasoningBytes int
	// MaxToolCalls caps the tool calls of one answer. Default 128.
	MaxToolCalls int
	// MaxArgumentBytes caps one tool call's arguments. Default 256 KiB.
	MaxArgumentBytes int
	// MaxMessageBytes caps the finalized assistant message: its text and
	// every call's id, name and arguments, counted as JSON-escaped
	// (assemble.Limits.MessageBytes). Default 960 KiB.
	MaxMessageBytes int
	// MaxChunks caps the frames relayed. Default 131072.
	MaxChunks int
}

// DefaultLimits are used for zero fields of Limits. They let anything
// within them be published with NATS's default 1 MiB max payload, of which
// the writers keep 4 KiB for headers (1,044,480 bytes for a record):
//
//   - a raw frame record (TURN_RAW) holds one frame as its body, byte for
//     byte (at most MaxEventBytes, 256 KiB), and a few headers;
//   - the frame's chunk record holds its normalized delta (strings decoded
//     from that frame and escaped again: at most twice their raw size,
//     U+2028 being the worst case), plus an envelope under 2 KiB: 2 * 256
//     KiB + 2 KiB = 514 KiB. The writer refuses either record when it
//     does not fit (raised limits), which the Observer reports as
//     TooLarge(LimitFrameBytes) (see Observer.Frame);
//   - the assistant message record holds at most MaxMessageBytes (960 KiB,
//     escapes counted) plus an envelope under 4 KiB (ids, step, provider,
//     model, usage, finish reasons): under 964 KiB. MaxTextBytes (512 KiB)
//     and MaxArgumentBytes (256 KiB per call) bound each part; the message
//     limit bounds their sum.
//
// Per attempt, the buffers stay under about 5 MiB: the SSE scanner's
// buffer (at most twice MaxLineBytes), one event's data, and the text,
// reasoning and arguments (each at most twice its limit while it grows).
// MaxChunks (128 Ki frames, one per token of the largest answers) and
// MaxStreamBytes (about twice the SSE bytes of 128 Ki OpenAI-style token
// frames) bound what one attempt writes to the chunk and raw streams.
var DefaultLimits = Limits{
	MaxLineBytes:      256 << 10,
	MaxEventBytes:     256 << 10,
	MaxStreamBytes:    64 << 20,
	MaxTextBytes:      512 << 10,
	MaxReasoningBytes: 512 << 10,
	MaxToolCalls:      128,
	MaxArgumentBytes:  256 << 10,
	MaxMessageBytes:   960 << 10,
	MaxChunks:         128 << 10,
}

// Names of the limits: the Reason of a RESPONSE_TOO_LARGE failure.
const (
	LimitLineBytes      = "sse_line_bytes"
	LimitEventBytes     = "sse_event_bytes"
	LimitBodyBytes      = "body_bytes"
	LimitStreamBytes    = "stream_bytes"
	LimitTextBytes      = assemble.LimitTextBytes
	LimitReasoningBytes = assemble.LimitReasoningBytes
	LimitToolCalls      = assemble.LimitToolCalls
	LimitArgumentBytes  = assemble.LimitArgumentBytes
	LimitMessageBytes   = assemble.LimitMessageBytes
	LimitChunks         = "chunks"
	// LimitFrameBytes: a frame the Observer could not relay because of its
	// size (its record does not fit the server's max payload).
	LimitFrameBytes = "frame_bytes"
)

// TooLarge is the RESPONSE_TOO_LARGE failure of crossing limit (one of the
// Limit constants).
func TooLarge(limit string) *Failure { return Fail(ClassResponseTooLarge, limit, nil) }

// WithDefaults returns l with zero or negative fields set from
// DefaultLimits.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits
	set := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&l.MaxLineBytes, d.MaxLineBytes)
	set(&l.MaxEventBytes, d.MaxEventBytes)
	set(&l.MaxStreamBytes, d.MaxStreamBytes)
	set(&l.MaxTextBytes, d.MaxTextBytes)
	set(&l.MaxReasoningBytes, d.MaxReasoningBytes)
	set(&l.MaxToolCalls, d.MaxToolCalls)
	set(&l.MaxArgumentBytes, d.MaxArgumentBytes)
	set(&l.MaxMessageBytes, d.MaxMessageBytes)
	set(&l.MaxChunks, d.MaxChunks)
	return l
}

// Content returns the limits an adapter's assembler enforces, defaults
// applied.
func (l Limits) Content() assemble.Limits {
	l = l.WithDefaults()
	return assemble.Limits{
		TextBytes: l.MaxTextBytes, ReasoningBytes: l.MaxReasoningBytes, ToolCalls: l.MaxToolCalls,
		ArgumentBytes: l.MaxArgumentBytes, MessageBytes: l.MaxMessageBytes,
	}
}

type limitsKey struct{}

// WithLimits returns a context carrying l for the attempt run under it.
// The Executor sets it on every attempt from Executor.Limits; an adapter
// called directly (a test) may be given one.
func WithLimits(ctx context.Context, l Limits) context.Context {
	return context.WithValue(ctx, limitsKey{}, l.WithDefaults())
}

// LimitsOf returns the limits an attempt run under ctx must enforce,
// defaults applied: DefaultLimits when ctx carries none. Adapters read it
// at the start of Stream.
func LimitsOf(ctx context.Context) Limits {
	if l, ok := ctx.Value(limitsKey{}).(Limits); ok {
		return l
	}
	return DefaultLimits
}

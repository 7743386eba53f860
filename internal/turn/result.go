package turn

import (
	"errors"
	"fmt"
	"math"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/redact"
	"github.com/turnstream/turnstream/pkg/wire"
)

// Defaults of ResultOptions.
const (
	// DefaultMaxResultBytes is the content a tool message stores at most:
	// config limits.tool_result.max_bytes's default.
	DefaultMaxResultBytes = config.DefaultToolResultMaxBytes
	// DefaultMaxRecordBytes is the encoded record a server with NATS's
	// default max_payload (1 MiB) accepts, headers set aside.
	DefaultMaxRecordBytes = 1<<20 - 4<<10
)

// recordSlack is kept free of the record limit when a tool message is
// sized: its time and position are set when it is appended, and their
// encoding may be a few bytes longer than when it was measured.
const recordSlack = 64

// ResultOptions say how tool results are stored.
type ResultOptions struct {
	// MaxBytes caps a stored result's content (config
	// limits.tool_result.max_bytes): a longer one is stored as its first
	// bytes and a marker that tells the model how much there was
	// (wire.TruncateContent), flagged content_truncated. Default
	// DefaultMaxResultBytes (256 KiB).
	MaxBytes int
	// MaxRecordBytes caps the encoded session-log record of a tool
	// message, which must fit in the server's max payload with its
	// headers: a result whose record would not fit is truncated further.
	// Default: what the Writer reports (a MaxRecordBytes method), else
	// DefaultMaxRecordBytes.
	MaxRecordBytes int
	// KeepCredentials stores results as the tools returned them. By
	// default (config limits.tool_result.redact: true) credential
	// material in a result is replaced by "[REDACTED]" before it is stored
	// and the message is flagged content_redacted: the session log, the
	// provider and every reader see the redacted text.
	KeepCredentials bool
}

// Validate reports a negative size.
func (o ResultOptions) Validate() error {
	if o.MaxBytes < 0 || o.MaxRecordBytes < 0 {
		return fmt.Errorf("turn: tool result sizes must not be negative (max_bytes %d, max_record_bytes %d)", o.MaxBytes, o.MaxRecordBytes)
	}
	return nil
}

func (o ResultOptions) maxBytes() int {
	if o.MaxBytes > 0 {
		return o.MaxBytes
	}
	return DefaultMaxResultBytes
}

// maxRecordBytes is the record limit: the smallest of the configured one
// and the writer's.
func (r *run) maxRecordBytes() int {
	limit := r.loop.Results.MaxRecordBytes
	if w, ok := r.w.(interface{ MaxRecordBytes() int }); ok {
		if n := w.MaxRecordBytes(); n > 0 && (limit <= 0 || n < limit) {
			limit = n
		}
	}
	if limit <= 0 {
		limit = DefaultMaxRecordBytes
	}
	return limit
}

// resultMessage is the tool message that stores a tool's result: its
// content redacted (unless KeepCredentials), then truncated to MaxBytes,
// then to what fits in one record in the turn's encoding. The redaction
// comes first, so a cut never leaves part of a credential.
func (r *run) resultMessage(step int, res wire.ToolResult) (*wire.Message, error) {
	m := &wire.Message{
		SessionID: r.req.SessionID, TurnID: r.req.TurnID, Time: r.loop.now(),
		Step: step, Role: wire.RoleTool, ToolCallID: res.CallID, IsError: res.IsError,
		// A repair the tool-worker SDK wrote ("tool outcome unknown").
		Synthesized: res.Synthesized,
	}
	// A result a tool worker cut ends with a marker: redact what it shows,
	// and mark that again with the size the tool worker counted.
	content, full, cut := wire.SplitTruncated(res.Content)
	if !r.loop.Results.KeepCredentials {
		content, m.ContentRedacted = redact.RedactJSON(content)
	}
	if cut {
		content += wire.TruncationMarker(full, len(content))
	}
	content, _, _ = wire.TruncateContent(content, r.loop.Results.maxBytes())
	codec := r.w.Codec()
	size := func(c string, full int, truncated bool) (int, error) {
		probe := *m
		probe.Seq = math.MaxUint64 // the longest position encoding
		probe.Content, probe.ContentTruncated = c, truncated
		if truncated {
			probe.ContentBytes = full
		}
		b, err := codec.Marshal(&probe)
		return len(b), err
	}
	fitted, full, truncated, err := wire.FitContent(content, r.maxRecordBytes()-recordSlack, size)
	if err != nil {
		if errors.Is(err, wire.ErrContentTooLarge) {
			return nil, fmt.Errorf("turn: tool message for call %s: %w", res.CallID, err)
		}
		return nil, fmt.Errorf("turn: encode tool message: %w", err)
	}
	m.Content = fitted
	if truncated || res.ContentTruncated {
		// A tool worker that cut the result reports its full size.
		m.ContentTruncated, m.ContentBytes = true, max(full, res.ContentBytes)
	}
	return m, nil
}

package wire

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"
)

// Attempt markers: every provider attempt ends with a marker chunk, so a UI
// can drop the partial text of an attempt that will not count.
const (
	MarkerCompleted = "completed"
	MarkerRetrying  = "retrying"
	MarkerFailed    = "failed"
)

// Chunk is the normalized delta of one provider frame, relayed on
// Subjects.Chunk(SessionID, TurnID), or the marker that ends an attempt.
// Headers HeaderStep, HeaderAttempt and HeaderSeq repeat Step, Attempt and
// Seq.
//
// A chunk never carries the provider's bytes: they hold reasoning and
// whatever a model writes, and every client reads chunks. Each frame's
// bytes go, with the same step, attempt and seq, to the worker- and
// operator-only TURN_RAW as a RawFrame. A reader given a chunk of an older
// writer that still has its "raw" or "raw_text" field ignores the field,
// as it ignores any field it does not know.
type Chunk struct {
	SessionID string
	TurnID    string
	Step      int
	Attempt   int
	Seq       int
	Provider  string
	Model     string
	// Event is the SSE event name, when the provider sent one.
	Event string
	// Delta is the normalized content of the frame. Reasoning never appears in it.
	Delta *Delta
	// Marker ends an attempt: completed, retrying or failed.
	Marker string
	// Failure is the coarse failure class of a retrying or failed marker;
	// HTTPStatus, ProviderDelayMS and RequestID complete its snapshot
	// (never a provider body or header).
	Failure         string
	HTTPStatus      int
	ProviderDelayMS int64
	RequestID       string
}

// Delta is the provider-neutral content of one frame.
type Delta struct {
	Text            string          `json:"text,omitempty"`
	ToolCalls       []ToolCallDelta `json:"tool_calls,omitempty"`
	Usage           *Usage          `json:"usage,omitempty"`
	FinishReason    string          `json:"finish_reason,omitempty"`
	RawFinishReason string          `json:"raw_finish_reason,omitempty"`
}

// Empty reports whether d carries nothing.
func (d *Delta) Empty() bool {
	return d == nil || (d.Text == "" && len(d.ToolCalls) == 0 && d.Usage == nil && d.FinishReason == "")
}

// ToolCallDelta is progress of one tool call, keyed by its block index in the
// assistant message. Progress is for display: a call is executable only once
// its message is finalized.
type ToolCallDelta struct {
	Index     int    `json:"index"`
	Start     bool   `json:"start,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	End       bool   `json:"end,omitempty"`
}

// chunkFields is the shape Chunk decodes from.
type chunkFields struct {
	SessionID       string `json:"session_id"`
	TurnID          string `json:"turn_id"`
	Step            int    `json:"step"`
	Attempt         int    `json:"attempt"`
	Seq             int    `json:"seq"`
	Provider        string `json:"provider,omitempty"`
	Model           string `json:"model,omitempty"`
	Event           string `json:"event,omitempty"`
	Delta           *Delta `json:"delta,omitempty"`
	Marker          string `json:"marker,omitempty"`
	Failure         string `json:"failure,omitempty"`
	HTTPStatus      int    `json:"http_status,omitempty"`
	ProviderDelayMS int64  `json:"provider_delay_ms,omitempty"`
	RequestID       string `json:"request_id,omitempty"`
}

// MarshalJSON writes the chunk as AppendJSON does.
func (c Chunk) MarshalJSON() ([]byte, error) {
	return c.AppendJSON(make([]byte, 0, c.jsonSizeHint())), nil
}

// jsonSizeHint is a capacity for the chunk's JSON encoding: the envelope
// and the delta's text and arguments (escaping aside).
func (c *Chunk) jsonSizeHint() int {
	n := 192
	if c.Delta != nil {
		n += len(c.Delta.Text)
		for i := range c.Delta.ToolCalls {
			n += 64 + len(c.Delta.ToolCalls[i].Name) + len(c.Delta.ToolCalls[i].Arguments)
		}
	}
	return n + n/8
}

// AppendJSON appends the chunk's JSON encoding to b.
func (c *Chunk) AppendJSON(b []byte) []byte {
	b = append(b, `{"session_id":`...)
	b = appendString(b, c.SessionID)
	b = append(b, `,"turn_id":`...)
	b = appendString(b, c.TurnID)
	b = append(b, `,"step":`...)
	b = strconv.AppendInt(b, int64(c.Step), 10)
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(c.Attempt), 10)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, int64(c.Seq), 10)
	b = appendOptString(b, `,"provider":`, c.Provider)
	b = appendOptString(b, `,"model":`, c.Model)
	b = appendOptString(b, `,"event":`, c.Event)
	if !c.Delta.Empty() {
		b = append(b, `,"delta":`...)
		b = c.Delta.appendJSON(b)
	}
	b = appendOptString(b, `,"marker":`, c.Marker)
	b = appendOptString(b, `,"failure":`, c.Failure)
	if c.HTTPStatus != 0 {
		b = append(b, `,"http_status":`...)
		b = strconv.AppendInt(b, int64(c.HTTPStatus), 10)
	}
	if c.ProviderDelayMS != 0 {
		b = append(b, `,"provider_delay_ms":`...)
		b = strconv.AppendInt(b, c.ProviderDelayMS, 10)
	}
	b = appendOptString(b, `,"request_id":`, c.RequestID)
	return append(b, '}')
}

func (d *Delta) appendJSON(b []byte) []byte {
	b = append(b, '{')
	first := true
	sep := func() {
		if !first {
			b = append(b, ',')
		}
		first = false
	}
	if d.Text != "" {
		sep()
		b = append(b, `"text":`...)
		b = appendString(b, d.Text)
	}
	if len(d.ToolCalls) > 0 {
		sep()
		b = append(b, `"tool_calls":[`...)
		for i, tc := range d.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"index":`...)
			b = strconv.AppendInt(b, int64(tc.Index), 10)
			if tc.Start {
				b = append(b, `,"start":true`...)
			}
			b = appendOptString(b, `,"name":`, tc.Name)
			b = appendOptString(b, `,"arguments":`, tc.Arguments)
			if tc.End {
				b = append(b, `,"end":true`...)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if d.Usage != nil {
		sep()
		u, _ := json.Marshal(d.Usage) // plain ints: cannot fail
		b = append(b, `"usage":`...)
		b = append(b, u...)
	}
	if d.FinishReason != "" {
		sep()
		b = append(b, `"finish_reason":`...)
		b = appendString(b, d.FinishReason)
		b = appendOptString(b, `,"raw_finish_reason":`, d.RawFinishReason)
	}
	return append(b, '}')
}

// UnmarshalJSON reads a chunk written by MarshalJSON.
func (c *Chunk) UnmarshalJSON(data []byte) error {
	var f chunkFields
	if err := json.Unmarshal(data, &f); err != nil {
		return err
	}
	c.fromFields(&f)
	return nil
}

func (c *Chunk) fields() *chunkFields {
	return &chunkFields{
		SessionID: c.SessionID, TurnID: c.TurnID, Step: c.Step, Attempt: c.Attempt, Seq: c.Seq,
		Provider: c.Provider, Model: c.Model, Event: c.Event, Delta: c.Delta,
		Marker: c.Marker, Failure: c.Failure,
		HTTPStatus: c.HTTPStatus, ProviderDelayMS: c.ProviderDelayMS, RequestID: c.RequestID,
	}
}

func (c *Chunk) fromFields(f *chunkFields) {
	*c = Chunk{
		SessionID: f.SessionID, TurnID: f.TurnID, Step: f.Step, Attempt: f.Attempt, Seq: f.Seq,
		Provider: f.Provider, Model: f.Model, Event: f.Event, Delta: f.Delta,
		Marker: f.Marker, Failure: f.Failure,
		HTTPStatus: f.HTTPStatus, ProviderDelayMS: f.ProviderDelayMS, RequestID: f.RequestID,
	}
	if c.Delta.Empty() {
		c.Delta = nil
	}
}

func appendOptString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	b = append(b, key...)
	return appendString(b, s)
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string exactly as encoding/json does
// with HTML escaping off: invalid UTF-8 becomes U+FFFD, U+2028 and U+2029
// are escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// EncodeMsgpack writes the chunk with the field names of its JSON.
func (c *Chunk) EncodeMsgpack(enc *msgpack.Encoder) error { return enc.Encode(c.fields()) }

// DecodeMsgpack reads a chunk written by EncodeMsgpack.
func (c *Chunk) DecodeMsgpack(dec *msgpack.Decoder) error {
	var f chunkFields
	if err := dec.Decode(&f); err != nil {
		return err
	}
	c.fromFields(&f)
	return nil
}

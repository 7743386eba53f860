package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"strings"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// Content types understood by Codec.
const (
	ContentTypeJSON    = "application/json"
	ContentTypeMsgpack = "application/msgpack"
)

// Codec encodes and decodes records in one content type. Both codecs use the
// same field names (the json struct tags).
//
// Both decoders of JSON and Msgpack run an iterative pre-pass over the whole
// document before the (recursive) decoder sees it, so no input can exhaust
// the stack or make the decoder allocate past its limits; a document that
// fails the pre-pass is a *ValidationError naming the offending path.
type Codec interface {
	ContentType() string
	// Marshal encodes v. A TurnRequest whose tool parameters, or a
	// SessionEvent whose payload, nests deeper or holds more values than
	// DefaultLimits allows is refused with a *ValidationError, so encoding
	// never recurses without bound either.
	Marshal(v any) ([]byte, error)
	// Unmarshal ignores fields it does not know, so readers keep working
	// when a newer writer adds one. It enforces DefaultLimits' MaxDepth
	// and MaxElements, not MaxRequestBytes: a stream's maximum message
	// size bounds the records it holds.
	Unmarshal(data []byte, v any) error
	// UnmarshalStrict decodes a request within DefaultLimits (size, depth,
	// element count) and rejects unknown fields (ReasonUnknownField), keys
	// that match a field only case-insensitively, duplicate keys at any
	// depth, invalid UTF-8 in any string or key, and trailing data. Every
	// error it returns is a *ValidationError whose Field names the path of
	// the problem ("tools[0].parameters.properties.a"). Workers use it for
	// requests, so a client's typo is reported, not ignored.
	UnmarshalStrict(data []byte, v any) error
}

// Decode decodes a record by its Content-Type header value, leniently.
func Decode(contentType string, data []byte, v any) error {
	c, err := CodecFor(contentType)
	if err != nil {
		return err
	}
	return c.Unmarshal(data, v)
}

// UnmarshalStrictWithin is c.UnmarshalStrict with the size, depth and
// element limits of lim (MaxRequestBytes, MaxDepth, MaxElements; zero
// fields mean DefaultLimits) instead of DefaultLimits. A codec other than
// JSON and Msgpack gets only the size check before its own UnmarshalStrict.
func UnmarshalStrictWithin(c Codec, data []byte, v any, lim Limits) error {
	sl := lim.Scan()
	switch c.(type) {
	case jsonCodec:
		return decodeStrict(data, v, sl)
	case msgpackCodec:
		return msgpackDecode(data, v, sl, true)
	}
	if len(data) > sl.MaxBytes {
		return tooBig(len(data), sl.MaxBytes)
	}
	return c.UnmarshalStrict(data, v)
}

// JSON and Msgpack are the two codecs.
var (
	JSON    Codec = jsonCodec{}
	Msgpack Codec = msgpackCodec{}
)

// CodecFor returns the codec of a Content-Type header value. An empty value
// means JSON; "application/x-msgpack" and "application/vnd.msgpack" are
// accepted as msgpack. Anything else is an error.
func CodecFor(contentType string) (Codec, error) {
	if contentType == "" {
		return JSON, nil
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil, fmt.Errorf("wire: content type %q: %w", contentType, err)
	}
	switch strings.ToLower(mt) {
	case ContentTypeJSON, "text/json":
		return JSON, nil
	case ContentTypeMsgpack, "application/x-msgpack", "application/vnd.msgpack":
		return Msgpack, nil
	}
	return nil, fmt.Errorf("wire: unsupported content type %q", contentType)
}

type jsonCodec struct{}

func (jsonCodec) ContentType() string { return ContentTypeJSON }

// Marshal writes v without HTML escaping: "<", ">" and "&" stay one byte
// each (json.Marshal would write six), so a record's size is its content's.
func (jsonCodec) Marshal(v any) ([]byte, error) {
	switch c := v.(type) {
	case *Chunk:
		return c.AppendJSON(make([]byte, 0, c.jsonSizeHint())), nil
	case Chunk:
		// Not json.Marshal: it would HTML-escape the delta's text.
		return c.AppendJSON(make([]byte, 0, c.jsonSizeHint())), nil
	}
	if err := checkRecord(v); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return b[:len(b)-1], nil // Encode ends the value with a newline
}

func (jsonCodec) Unmarshal(data []byte, v any) error {
	if err := scanJSON(data, anyShape, readerLimits, false); err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

func (jsonCodec) UnmarshalStrict(data []byte, v any) error {
	return decodeStrict(data, v, DefaultLimits.Scan())
}

// decodeStrict decodes exactly one JSON value within lim, after a strict
// pre-pass (see scanJSON) that also rejects unknown fields, duplicate keys,
// invalid UTF-8 and anything but white space after the value.
func decodeStrict(data []byte, v any, lim ScanLimits) error {
	if err := scanJSON(data, shapeOf(v), lim, true); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return strictError(dec.Decode(v))
}

type msgpackCodec struct{}

func (msgpackCodec) ContentType() string { return ContentTypeMsgpack }

var encPool = sync.Pool{New: func() any {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.SetCustomStructTag("json")
	enc.UseCompactInts(true)
	enc.SetOmitEmpty(false)
	return &pooledEncoder{buf: &buf, enc: enc}
}}

type pooledEncoder struct {
	buf *bytes.Buffer
	enc *msgpack.Encoder
}

func (msgpackCodec) Marshal(v any) ([]byte, error) {
	if c, ok := v.(Chunk); ok {
		v = &c // EncodeMsgpack has a pointer receiver
	}
	if err := checkRecord(v); err != nil {
		return nil, err
	}
	pe := encPool.Get().(*pooledEncoder)
	defer encPool.Put(pe)
	pe.buf.Reset()
	if err := pe.enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.Clone(pe.buf.Bytes()), nil
}

func (msgpackCodec) Unmarshal(data []byte, v any) error {
	return msgpackDecode(data, v, readerLimits, false)
}

func (msgpackCodec) UnmarshalStrict(data []byte, v any) error {
	return msgpackDecode(data, v, DefaultLimits.Scan(), true)
}

// msgpackDecode decodes one msgpack value within lim after a pre-pass (see
// scanMsgpack); strict, it rejects unknown fields and trailing data too.
func msgpackDecode(data []byte, v any, lim ScanLimits, strict bool) error {
	root := anyShape
	if strict {
		root = shapeOf(v)
	}
	if err := scanMsgpack(data, root, lim, strict); err != nil {
		return err
	}
	dec := msgpack.NewDecoder(bytes.NewReader(data))
	dec.SetCustomStructTag("json")
	dec.DisallowUnknownFields(strict)
	dec.SetMapDecoder(decodeStringMap)
	err := dec.Decode(v)
	if strict {
		return strictError(err)
	}
	return err
}

// decodeStringMap decodes maps nested in `any` values (tool parameter schemas)
// as map[string]any, the shape JSON produces, instead of map[any]any.
func decodeStringMap(dec *msgpack.Decoder) (any, error) {
	return dec.DecodeMap()
}

// checkMsgpack is the lenient pre-pass of Unmarshal.
func checkMsgpack(data []byte) error { return scanMsgpack(data, anyShape, readerLimits, false) }

// checkRecord bounds the free-form parts of the records that have any (tool
// parameters, event payloads) before they are encoded recursively.
func checkRecord(v any) error {
	lim := DefaultLimits.Scan()
	switch r := v.(type) {
	case *TurnRequest:
		if r != nil {
			return checkTools(r.Tools, lim)
		}
	case TurnRequest:
		return checkTools(r.Tools, lim)
	case *SessionEvent:
		if r != nil {
			return checkValue("payload", r.Payload, lim)
		}
	case SessionEvent:
		return checkValue("payload", r.Payload, lim)
	}
	return nil
}

func checkTools(tools []Tool, lim ScanLimits) error {
	for i := range tools {
		if err := checkValue(fmt.Sprintf("tools[%d].parameters", i), tools[i].Parameters, lim); err != nil {
			return err
		}
	}
	return nil
}

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
type Codec interface {
	ContentType() string
	Marshal(v any) ([]byte, error)
	// Unmarshal ignores fields it does not know, so readers keep working
	// when a newer writer adds one.
	Unmarshal(data []byte, v any) error
	// UnmarshalStrict rejects unknown fields and trailing data; workers use
	// it for requests, so a client's typo is reported, not ignored.
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

func (jsonCodec) Marshal(v any) ([]byte, error) {
	switch c := v.(type) {
	case *Chunk:
		return c.AppendJSON(make([]byte, 0, 160+len(c.Raw)+len(c.Raw)/8)), nil
	case Chunk:
		// Not json.Marshal: it would compact and HTML-escape the raw frame.
		return c.AppendJSON(make([]byte, 0, 160+len(c.Raw)+len(c.Raw)/8)), nil
	}
	return json.Marshal(v)
}

func (jsonCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

func (jsonCodec) UnmarshalStrict(data []byte, v any) error { return decodeStrict(data, v) }

// decodeStrict decodes exactly one JSON value, rejecting unknown fields and
// anything but white space after the value.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if len(bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n")) > 0 {
		return fmt.Errorf("wire: trailing data after JSON value")
	}
	return nil
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
	pe := encPool.Get().(*pooledEncoder)
	defer encPool.Put(pe)
	pe.buf.Reset()
	if err := pe.enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.Clone(pe.buf.Bytes()), nil
}

func (msgpackCodec) Unmarshal(data []byte, v any) error { return msgpackDecode(data, v, false) }

func (msgpackCodec) UnmarshalStrict(data []byte, v any) error { return msgpackDecode(data, v, true) }

func msgpackDecode(data []byte, v any, strict bool) error {
	if err := checkMsgpack(data); err != nil {
		return err
	}
	r := bytes.NewReader(data)
	dec := msgpack.NewDecoder(r)
	dec.SetCustomStructTag("json")
	dec.DisallowUnknownFields(strict)
	dec.SetMapDecoder(decodeStringMap)
	if err := dec.Decode(v); err != nil {
		return err
	}
	if strict && r.Len() > 0 {
		return fmt.Errorf("wire: trailing data after msgpack value")
	}
	return nil
}

// decodeStringMap decodes maps nested in `any` values (tool parameter schemas)
// as map[string]any, the shape JSON produces, instead of map[any]any.
func decodeStringMap(dec *msgpack.Decoder) (any, error) {
	return dec.DecodeMap()
}

// checkMsgpack rejects data whose array, map, string, binary or extension
// headers claim more elements or bytes than data holds. msgpack v5.4.1
// allocates a slice of structs at its declared length (its allocation limit
// is never applied there), so ten bytes claiming 2^32 input messages would
// exhaust memory. Every value takes at least one byte, so a valid message
// never has more values pending than bytes left. The scan is iterative, so
// deep nesting cannot exhaust the stack here either.
func checkMsgpack(data []byte) error {
	pos, pending := 0, 1
	need := func(n int) bool { return n >= 0 && n <= len(data)-pos }
	length := func(size int) (int, bool) {
		if !need(size) {
			return 0, false
		}
		var n uint64
		for _, b := range data[pos : pos+size] {
			n = n<<8 | uint64(b)
		}
		pos += size
		return int(n), n <= uint64(len(data))
	}
	for pending > 0 {
		if pos >= len(data) {
			return fmt.Errorf("wire: malformed msgpack: truncated")
		}
		c := data[pos]
		pos++
		pending--
		var elems, skip int // values inside, bytes to skip
		ok := true
		switch {
		case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		case c >= 0x80 && c <= 0x8f:
			elems = 2 * int(c&0x0f)
		case c >= 0x90 && c <= 0x9f:
			elems = int(c & 0x0f)
		case c >= 0xa0 && c <= 0xbf:
			skip = int(c & 0x1f)
		case c == 0xc4 || c == 0xd9:
			skip, ok = length(1)
		case c == 0xc5 || c == 0xda:
			skip, ok = length(2)
		case c == 0xc6 || c == 0xdb:
			skip, ok = length(4)
		case c == 0xc7, c == 0xc8, c == 0xc9:
			skip, ok = length(1 << (c - 0xc7))
			skip++ // the type byte
		case c == 0xca:
			skip = 4
		case c == 0xcb:
			skip = 8
		case c >= 0xcc && c <= 0xcf:
			skip = 1 << (c - 0xcc)
		case c >= 0xd0 && c <= 0xd3:
			skip = 1 << (c - 0xd0)
		case c >= 0xd4 && c <= 0xd8:
			skip = 1 + 1<<(c-0xd4)
		case c == 0xdc:
			elems, ok = length(2)
		case c == 0xdd:
			elems, ok = length(4)
		case c == 0xde:
			elems, ok = length(2)
			elems *= 2
		case c == 0xdf:
			elems, ok = length(4)
			elems *= 2
		default: // 0xc1 is never used
			return fmt.Errorf("wire: malformed msgpack: invalid code 0x%x at %d", c, pos-1)
		}
		if !ok || !need(skip) {
			return fmt.Errorf("wire: malformed msgpack: length at %d exceeds the data", pos)
		}
		pos += skip
		pending += elems
		if pending > len(data)-pos {
			return fmt.Errorf("wire: malformed msgpack: %d values declared, %d bytes left", pending, len(data)-pos)
		}
	}
	return nil
}

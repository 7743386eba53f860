package wire

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// FuzzScanMsgpack runs the msgpack pre-pass on arbitrary bytes, strict and
// lenient. It must not panic; a document the strict pass accepts decodes as
// a free-form value; a rejection is a *ValidationError.
func FuzzScanMsgpack(f *testing.F) {
	seeds := []any{
		nil, true, 1, -1, 1 << 40, 1.5, "x", []byte("bin"), time.Unix(1<<40, 5),
		map[string]any{"a": []any{1, "b", map[string]any{"c": nil}}},
		[]any{[]any{[]any{[]any{}}}},
	}
	for _, v := range seeds {
		b, err := msgpack.Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint8(0), uint16(0))
	}
	f.Add(bytes.Repeat([]byte{0x91}, 100), uint8(0), uint16(0))
	f.Add(bytes.Repeat([]byte{0x81, 0xa1, 'a'}, 100), uint8(0), uint16(0))
	f.Add([]byte("\x82\xa1a\xc0\xa1a\xc0"), uint8(0), uint16(0))
	f.Add([]byte("\x81\x01\xc0"), uint8(0), uint16(0))
	f.Add([]byte("\xdd\x00\x01\x00\x00\xc0"), uint8(0), uint16(0))
	f.Add([]byte("\xa2\xff\xfe"), uint8(0), uint16(0))
	f.Add([]byte("\x92\x92\x01\x02\x03"), uint8(2), uint16(4))
	f.Fuzz(func(t *testing.T, data []byte, depth uint8, elements uint16) {
		lim := ScanLimits{MaxDepth: int(depth), MaxElements: int(elements)}.withDefaults()
		for _, strict := range []bool{true, false} {
			err := scanMsgpack(data, anyShape, lim, strict)
			if err != nil {
				var ve *ValidationError
				if !errors.As(err, &ve) {
					t.Fatalf("scanMsgpack(%x, strict %v) = %T %v; want a *ValidationError", data, strict, err, err)
				}
				if len(ve.Field) > maxPathLen {
					t.Errorf("scanMsgpack(%x) field = %q; want at most %d bytes", data, ve.Field, maxPathLen)
				}
				continue
			}
			if !strict {
				var v any
				_ = msgpackDecode(data, &v, lim, false) // must not panic
				continue
			}
			var v any
			if err := msgpackDecode(data, &v, lim, true); err != nil {
				t.Fatalf("scanMsgpack(%x) = nil; but it does not decode: %v", data, err)
			}
			if err := checkValue("", v, lim); err != nil {
				t.Errorf("checkValue(decoded %x) = %v; want nil after the pre-pass accepted it", data, err)
			}
		}
	})
}

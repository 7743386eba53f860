package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// typicalRequest is a request of realistic size: a few messages and eight
// tools with small schemas (about 6 KB of JSON).
func typicalRequest() *TurnRequest {
	r := validRequest()
	r.Input = append(r.Input, InputMessage{Role: RoleUser, Content: strings.Repeat("Tell me about Paris. ", 50)})
	for i := range 8 {
		props := map[string]any{}
		for j := range 6 {
			props[fmt.Sprintf("arg_%d", j)] = map[string]any{"type": "string", "description": "An argument of the tool.", "enum": []any{"a", "b", "c"}}
		}
		r.Tools = append(r.Tools, Tool{Name: fmt.Sprintf("tool_%d", i), Description: "Does a thing with its arguments.", Parameters: map[string]any{
			"type": "object", "properties": props, "required": []any{"arg_0", "arg_1"}, "additionalProperties": false,
		}})
	}
	return r
}

// BenchmarkUnmarshalStrict compares the strict pre-pass alone, the plain
// decoder alone (what UnmarshalStrict did before the pre-pass) and the two
// together, for a typical request in each codec.
func BenchmarkUnmarshalStrict(b *testing.B) {
	r := typicalRequest()
	jb, err := JSON.Marshal(r)
	if err != nil {
		b.Fatal(err)
	}
	mb, err := Msgpack.Marshal(r)
	if err != nil {
		b.Fatal(err)
	}
	lim := DefaultLimits.Scan()
	sh := shapeOf(r)
	cases := []struct {
		name string
		data []byte
		run  func(data []byte) error
	}{
		{"json/prepass", jb, func(d []byte) error { return scanJSON(d, sh, lim, true) }},
		{"json/decode", jb, func(d []byte) error {
			dec := json.NewDecoder(bytes.NewReader(d))
			dec.DisallowUnknownFields()
			var out TurnRequest
			return dec.Decode(&out)
		}},
		{"json/strict", jb, func(d []byte) error { var out TurnRequest; return JSON.UnmarshalStrict(d, &out) }},
		{"msgpack/prepass", mb, func(d []byte) error { return scanMsgpack(d, sh, lim, true) }},
		{"msgpack/decode", mb, func(d []byte) error {
			dec := msgpack.NewDecoder(bytes.NewReader(d))
			dec.SetCustomStructTag("json")
			dec.DisallowUnknownFields(true)
			dec.SetMapDecoder(decodeStringMap)
			var out TurnRequest
			return dec.Decode(&out)
		}},
		{"msgpack/strict", mb, func(d []byte) error { var out TurnRequest; return Msgpack.UnmarshalStrict(d, &out) }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.data)))
			b.ReportAllocs()
			for b.Loop() {
				if err := c.run(c.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRejectHostile measures how fast UnmarshalStrict refuses hostile
// requests of about 1 MB.
func BenchmarkRejectHostile(b *testing.B) {
	const million = 1_000_000
	keys := func() []byte {
		var sb strings.Builder
		sb.WriteString("{")
		for i := range 100_010 {
			fmt.Fprintf(&sb, `"%x":0,`, i)
		}
		sb.WriteString(`"end":0}`)
		return hostileJSON(sb.String())
	}()
	cases := []struct {
		name  string
		codec Codec
		data  []byte
	}{
		{"json/arrays-1M-deep", JSON, hostileJSON(`{"a":` + strings.Repeat("[", million))},
		{"json/maps-200k-deep", JSON, hostileJSON(strings.Repeat(`{"a":`, 200_000))},
		{"json/100k-values", JSON, hostileJSON(`{"a":[` + strings.Repeat("0,", 150_000) + `0]}`)},
		{"json/100k-keys", JSON, keys},
		{"msgpack/arrays-1M-deep", Msgpack, hostileMsgpack(append(mp(byte(0x81), "a"), bytes.Repeat([]byte{0x91}, million)...))},
		{"msgpack/maps-300k-deep", Msgpack, hostileMsgpack(bytes.Repeat(mp(byte(0x81), "a"), 300_000))},
		{"msgpack/100k-values", Msgpack, hostileMsgpack(append(mp(byte(0x81), "a", []byte{0xdd, 0x00, 0x03, 0x0d, 0x40}), bytes.Repeat([]byte{0xc0}, 200_000)...))},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.data)))
			b.ReportAllocs()
			for b.Loop() {
				var r TurnRequest
				if err := c.codec.UnmarshalStrict(c.data, &r); RejectReason(err) != ReasonTooLarge {
					b.Fatalf("UnmarshalStrict = %v; want too_large", err)
				}
			}
		})
	}
}

// benchChunks are chunks of the shapes a turn publishes most: a word of
// text, a tool call's argument fragment, the finish with usage.
func benchChunks() []struct {
	name  string
	chunk Chunk
} {
	base := Chunk{SessionID: "sess_01JD3Q7Z8K4M2N6P", TurnID: "turn_01JD3Q7ZA9X5", Step: 1, Attempt: 1, Seq: 17, Provider: "openai", Model: "gpt-4o-mini"}
	text, args, finish := base, base, base
	text.Delta = &Delta{Text: "museums, "}
	args.Delta = &Delta{ToolCalls: []ToolCallDelta{{Index: 1, Arguments: `"Paris"`}}}
	finish.Delta = &Delta{FinishReason: FinishStop, Usage: &Usage{InputTokens: 120, OutputTokens: 67}}
	return []struct {
		name  string
		chunk Chunk
	}{{"text", text}, {"tool_args", args}, {"finish", finish}}
}

// BenchmarkChunkEncode measures a chunk's envelope in each codec: JSON
// through AppendJSON into a reused buffer and through Marshal (what the
// bus publishes, one new buffer a chunk), and msgpack through Marshal.
func BenchmarkChunkEncode(b *testing.B) {
	for _, tt := range benchChunks() {
		c := tt.chunk
		b.Run("json/append/"+tt.name, func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 0, 512)
			for b.Loop() {
				buf = c.AppendJSON(buf[:0])
			}
			b.SetBytes(int64(len(buf)))
		})
		for _, codec := range []Codec{JSON, Msgpack} {
			b.Run(codec.ContentType()[len("application/"):]+"/marshal/"+tt.name, func(b *testing.B) {
				b.ReportAllocs()
				var out []byte
				for b.Loop() {
					var err error
					if out, err = codec.Marshal(&c); err != nil {
						b.Fatal(err)
					}
				}
				b.SetBytes(int64(len(out)))
			})
		}
	}
}

// BenchmarkRawFrameHeader measures the headers of a raw frame's record
// (its body is the provider's bytes, published as they are).
func BenchmarkRawFrameHeader(b *testing.B) {
	f := RawFrame{SessionID: "sess_01JD3Q7Z8K4M2N6P", TurnID: "turn_01JD3Q7ZA9X5", Step: 1, Attempt: 1, Seq: 17, Provider: "openai", Model: "gpt-4o-mini",
		Bytes: []byte(`{"id":"chatcmpl-mock","object":"chat.completion.chunk","created":1767225600,"model":"mock-1","choices":[{"index":0,"delta":{"content":"museums, "},"finish_reason":null}]}`)}
	for _, tt := range []struct{ name, event string }{{"no_event", ""}, {"event", "response.output_text.delta"}} {
		b.Run(tt.name, func(b *testing.B) {
			f.Event = tt.event
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.Header(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

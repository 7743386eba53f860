package wire_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/turnstream/turnstream/pkg/wire"
)

// FuzzDecodeTurnRequest decodes arbitrary bytes as a TurnRequest with either
// codec. Decoding must not panic; a request that decodes and validates must
// survive a re-encode and decode with the same codec unchanged.
func FuzzDecodeTurnRequest(f *testing.F) {
	seeds := []*wire.TurnRequest{
		{SessionID: "s1", TurnID: "t1", Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "hi"}}},
		{
			SessionID: "s-2", TurnID: "t_2",
			Input:  []wire.InputMessage{{Role: wire.RoleSystem, Content: "sys"}, {Role: wire.RoleUser, Content: "héllo \u2028 \"q\""}},
			System: "be brief", Route: "default",
			Tools: []wire.Tool{{Name: "get_time", Description: "d", Parameters: map[string]any{
				"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer", "maximum": 1e300}},
				"required": []any{"n"},
			}}},
			Budgets: &wire.Budgets{MaxIterations: 3, WallClockMS: wire.MaxBudgetWallClockMS},
		},
	}
	for _, s := range seeds {
		for i, c := range []wire.Codec{wire.JSON, wire.Msgpack} {
			b, err := c.Marshal(s)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b, i == 1)
		}
	}
	f.Add([]byte(`{"session_id":"s","turn_id":"t","input":[{"role":"user","content":"x"}],"tools":[]}`), false)
	f.Add([]byte(`{"session_id":"s","turn_id":"t","input":[{"role":"user","content":"x"}],"budgets":{}}`), false)
	f.Add([]byte(`{"session_id":"s","input":null}}`), false)
	f.Add([]byte{0x81, 0xa5, 't', 'o', 'o', 'l', 's', 0xc0}, true)
	f.Add([]byte{}, true)
	f.Add([]byte(`{"session_id":"s","Session_id":"s","input":[{"role":"user","content":"x"}]}`), false)
	f.Add([]byte(`{"session_id":"s","input":[{"role":"user","content":"x"}],"tools":[{"name":"t","parameters":{"a":[[[[[[1]]]]]]}}]}`), false)
	f.Add([]byte("\x81\xa5tools\x91\x81\xaaparameters\x81\xa1a\x91\x91\x91\x91\xc0"), true)

	f.Fuzz(func(t *testing.T, data []byte, useMsgpack bool) {
		codec := wire.JSON
		if useMsgpack {
			codec = wire.Msgpack
		}
		decoders := []struct {
			name   string
			decode func([]byte, any) error
		}{
			{"Unmarshal", codec.Unmarshal},
			{"UnmarshalStrict", codec.UnmarshalStrict},
		}
		for _, d := range decoders {
			var r wire.TurnRequest
			if err := d.decode(data, &r); err != nil {
				var ve *wire.ValidationError
				if d.name == "UnmarshalStrict" && !errors.As(err, &ve) {
					t.Fatalf("%s.UnmarshalStrict(%q) = %T %v; want a *wire.ValidationError", codec.ContentType(), data, err, err)
				}
				continue
			}
			if err := r.Validate(r.SessionID, wire.Limits{}); err != nil {
				continue
			}
			b, err := codec.Marshal(&r)
			if err != nil {
				t.Fatalf("%s.Marshal(%+v) = %v; want nil for a valid request", codec.ContentType(), r, err)
			}
			// What we write must pass the strict decoder workers use.
			var back wire.TurnRequest
			if err := codec.UnmarshalStrict(b, &back); err != nil {
				t.Fatalf("%s.UnmarshalStrict(%q) = %v; want nil for a re-encoded valid request (%s)", codec.ContentType(), b, err, d.name)
			}
			if err := back.Validate(back.SessionID, wire.Limits{}); err != nil {
				t.Errorf("re-decoded request: Validate = %v; want nil (%s)", err, d.name)
			}
			sameRequest(t, codec.ContentType()+" "+d.name, &back, &r)
		}
	})
}

// sameRequest compares two requests field by field; tool parameter schemas,
// whose numbers a codec may hand back with another Go type, compare by their
// canonical JSON.
func sameRequest(t *testing.T, codec string, got, want *wire.TurnRequest) {
	t.Helper()
	if got.SessionID != want.SessionID || got.TurnID != want.TurnID || got.System != want.System || got.Route != want.Route {
		t.Errorf("%s round trip ids/system/route = %q %q %q %q; want %q %q %q %q", codec,
			got.SessionID, got.TurnID, got.System, got.Route, want.SessionID, want.TurnID, want.System, want.Route)
	}
	if !reflect.DeepEqual(got.Input, want.Input) {
		t.Errorf("%s round trip Input = %+v; want %+v", codec, got.Input, want.Input)
	}
	if !reflect.DeepEqual(got.Budgets, want.Budgets) {
		t.Errorf("%s round trip Budgets = %+v; want %+v", codec, got.Budgets, want.Budgets)
	}
	if len(got.Tools) != len(want.Tools) {
		t.Fatalf("%s round trip Tools = %+v; want %+v", codec, got.Tools, want.Tools)
	}
	for i := range want.Tools {
		g, w := got.Tools[i], want.Tools[i]
		if g.Name != w.Name || g.Description != w.Description {
			t.Errorf("%s round trip Tools[%d] = %+v; want %+v", codec, i, g, w)
		}
		// Absent and empty parameters both mean "an object with no
		// declared properties"; omitempty writes neither.
		gj, err1 := json.Marshal(cmpOr(g.Parameters))
		wj, err2 := json.Marshal(cmpOr(w.Parameters))
		if err1 != nil || err2 != nil || !bytes.Equal(gj, wj) {
			t.Errorf("%s round trip Tools[%d].Parameters = %s (%v); want %s (%v)", codec, i, gj, err1, wj, err2)
		}
	}
}

// FuzzChunkJSON encodes chunks with arbitrary text. The encoding must
// always be valid UTF-8 JSON that decodes back, each text field back byte
// for byte when it was valid UTF-8 and with each invalid byte replaced by
// U+FFFD otherwise (as encoding/json does); msgpack must carry the text
// unchanged whatever it holds.
func FuzzChunkJSON(f *testing.F) {
	for _, s := range []string{
		"hi", "", "only text", "\t", "\xff", "\u2028\u2029", "\x00\x1f\"\\", "\xe2\x80", "🦜", "<&>",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		c := &wire.Chunk{
			SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 1, Seq: 1,
			Provider: text, Model: text, Event: text,
			Delta: &wire.Delta{
				Text:         text,
				ToolCalls:    []wire.ToolCallDelta{{Index: 0, Start: true, Name: text, Arguments: text, End: true}},
				FinishReason: wire.FinishStop, RawFinishReason: text,
			},
			Failure: text,
		}
		b := c.AppendJSON(nil)
		if !json.Valid(b) || !utf8.Valid(b) {
			t.Fatalf("AppendJSON(text %q) = %q; not valid UTF-8 JSON", text, b)
		}
		var back wire.Chunk
		if err := wire.JSON.Unmarshal(b, &back); err != nil {
			t.Fatalf("JSON.Unmarshal(%q) = %v", b, err)
		}
		wantText := string([]rune(text))
		if back.Delta == nil || back.Delta.Text != wantText || back.Event != wantText ||
			len(back.Delta.ToolCalls) != 1 || back.Delta.ToolCalls[0].Arguments != wantText {
			t.Errorf("JSON round trip of text %q = %+v; want the text %q in every field", text, back, wantText)
		}

		mb, err := wire.Msgpack.Marshal(c)
		if err != nil {
			t.Fatalf("Msgpack.Marshal = %v", err)
		}
		var mback wire.Chunk
		if err := wire.Msgpack.Unmarshal(mb, &mback); err != nil {
			t.Fatalf("Msgpack.Unmarshal = %v", err)
		}
		if mback.Delta == nil || mback.Delta.Text != text || mback.Event != text {
			t.Errorf("msgpack round trip of text %q = %+v; want it unchanged", text, mback)
		}
	})
}

func cmpOr(m map[string]any) map[string]any {
	if len(m) == 0 {
		return map[string]any{}
	}
	return m
}

// FuzzCheckJSON runs the pre-pass on arbitrary bytes. It must not panic; a
// document it accepts is valid JSON that decodes; one it rejects gets a
// *wire.ValidationError with a short ASCII path.
func FuzzCheckJSON(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,2,{"b":null}],"c":"\u00e9\ud83e\udd9c"}`, `[]`, `0`, `-1.5e-7`, `"x"`, `{"a":1,"a":2}`,
		"\"\xff\"", `"\ud800"`, `[1,]`, `{"a" 1}`, strings.Repeat("[", 70) + strings.Repeat("]", 70),
		strings.Repeat(`{"k":`, 70) + "0" + strings.Repeat("}", 70), `{"` + strings.Repeat("x", 100) + `":[}`,
	} {
		f.Add([]byte(s), uint8(0), uint16(0))
	}
	f.Add([]byte(`[[[1]]]`), uint8(2), uint16(3))
	f.Fuzz(func(t *testing.T, data []byte, depth uint8, elements uint16) {
		lim := wire.ScanLimits{MaxDepth: int(depth), MaxElements: int(elements)}
		err := wire.CheckJSON(data, lim)
		if err != nil {
			var ve *wire.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("CheckJSON(%q) = %T %v; want a *wire.ValidationError", data, err, err)
			}
			if ve.Reason != wire.ReasonTooLarge && ve.Reason != wire.ReasonMalformed {
				t.Errorf("CheckJSON(%q) reason = %q; want too_large or malformed", data, ve.Reason)
			}
			if len(ve.Field) > 128 || !isASCII(ve.Field) {
				t.Errorf("CheckJSON(%q) field = %q; want at most 128 ASCII bytes", data, ve.Field)
			}
			return
		}
		if !json.Valid(data) || !utf8.Valid(data) {
			t.Fatalf("CheckJSON(%q) = nil; but it is not valid UTF-8 JSON", data)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("CheckJSON(%q) = nil; but it does not decode: %v", data, err)
		}
		// A value within the limits passes the same limits as a Go value.
		if err := wire.CheckValue(v, lim); err != nil {
			t.Errorf("CheckValue(decoded %q) = %v; want nil after CheckJSON accepted it", data, err)
		}
	})
}

// FuzzDecodeNested decodes requests whose tool parameters nest depth
// levels of arrays or maps holding width values, in either codec: near,
// at and far past the limits. Decoding must not panic; a rejection is a
// *wire.ValidationError (too_large past the limits); an accepted request
// validates and encodes again without error.
func FuzzDecodeNested(f *testing.F) {
	for _, d := range []uint32{0, 1, 59, 60, 61, 100, 10_000, 1_000_000} {
		for _, kind := range []uint8{0, 1, 2} {
			f.Add(d, uint32(1), kind, false)
			f.Add(d, uint32(1), kind, true)
		}
	}
	f.Add(uint32(2), uint32(99_980), uint8(0), false)
	f.Add(uint32(2), uint32(99_990), uint8(0), true)
	f.Add(uint32(2), uint32(300_000), uint8(1), true)
	f.Fuzz(func(t *testing.T, depth, width uint32, kind uint8, useMsgpack bool) {
		depth %= 1_100_000
		width %= 600_000
		data := nestedRequest(int(depth), int(width), kind%3, useMsgpack)
		codec := wire.JSON
		if useMsgpack {
			codec = wire.Msgpack
		}
		for _, strict := range []bool{true, false} {
			var r wire.TurnRequest
			var err error
			if strict {
				err = codec.UnmarshalStrict(data, &r)
			} else {
				err = codec.Unmarshal(data, &r)
			}
			// Root, tools, tool and parameters nest 4 levels around the
			// depth levels and the innermost array.
			if tooDeep := depth+5 > 64; tooDeep || err != nil {
				var ve *wire.ValidationError
				if !errors.As(err, &ve) {
					t.Fatalf("%s decode (strict %v) of depth %d, width %d = %v; want a *wire.ValidationError", codec.ContentType(), strict, depth, width, err)
				}
				if tooDeep && ve.Reason != wire.ReasonTooLarge {
					t.Errorf("%s decode of depth %d = %v; want too_large", codec.ContentType(), depth, err)
				}
				continue
			}
			if err := r.Validate("s1", wire.Limits{MaxToolSchemaBytes: 4 << 20}); err != nil {
				var ve *wire.ValidationError
				if !errors.As(err, &ve) {
					t.Fatalf("Validate = %v; want nil or a *wire.ValidationError", err)
				}
			}
			if _, err := codec.Marshal(&r); err != nil {
				t.Errorf("%s.Marshal(decoded request of depth %d, width %d) = %v; want nil", codec.ContentType(), depth, width, err)
			}
		}
	})
}

// nestedRequest builds a request whose first tool's parameters hold, under
// "a", depth levels of arrays (kind 0), maps (kind 1) or both (kind 2)
// around an array of width zeros. Past the limits it stops writing closers
// once the document is over 1 MiB, as an attacker would.
func nestedRequest(depth, width int, kind uint8, useMsgpack bool) []byte {
	if useMsgpack {
		b := []byte("\x83\xaasession_id\xa2s1\xa5input\x91\x82\xa4role\xa4user\xa7content\xa2hi" +
			"\xa5tools\x91\x82\xa4name\xa1x\xaaparameters\x81\xa1a")
		for i := range depth {
			if kind == 0 || kind == 2 && i%2 == 0 {
				b = append(b, 0x91)
			} else {
				b = append(b, 0x81, 0xa1, 'k')
			}
		}
		b = append(b, 0xdd, byte(width>>24), byte(width>>16), byte(width>>8), byte(width))
		return append(b, make([]byte, width)...) // positive fixint zeros
	}
	var b strings.Builder
	b.WriteString(`{"session_id":"s1","input":[{"role":"user","content":"hi"}],"tools":[{"name":"x","parameters":{"a":`)
	closers := make([]byte, 0, 64)
	for i := range depth {
		if kind == 0 || kind == 2 && i%2 == 0 {
			b.WriteString("[")
			if len(closers) < cap(closers) {
				closers = append(closers, ']')
			}
		} else {
			b.WriteString(`{"k":`)
			if len(closers) < cap(closers) {
				closers = append(closers, '}')
			}
		}
	}
	b.WriteString("[")
	b.WriteString(strings.TrimSuffix(strings.Repeat("0,", width), ","))
	b.WriteString("]")
	if depth <= cap(closers) {
		for i := len(closers) - 1; i >= 0; i-- {
			b.WriteByte(closers[i])
		}
	}
	b.WriteString("}}]}")
	return []byte(b.String())
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

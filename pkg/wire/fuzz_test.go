package wire_test

import (
	"bytes"
	"encoding/json"
	"reflect"
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
			Budgets: &wire.Budgets{MaxIterations: 3, WallClockMS: 1 << 40},
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

// FuzzChunkJSON encodes chunks with arbitrary raw bytes and text. The
// encoding must always be valid UTF-8 JSON that decodes back; Raw must come
// back byte for byte when it was valid UTF-8 (JSON or text), and with each
// invalid byte replaced by U+FFFD otherwise (as encoding/json does). msgpack
// must carry Raw unchanged whatever it holds.
func FuzzChunkJSON(f *testing.F) {
	for _, s := range []struct{ raw, text string }{
		{`{"choices":[{"delta":{"content":"hi"}}]}`, "hi"},
		{"[DONE]", ""},
		{"", "only text"},
		{" {\"a\":1}\n", "\t"},
		{"\"\xff\"", "\xff"},
		{"null", "\u2028\u2029"},
		{`{"a":"\u0000<>&"}`, "\x00\x1f\"\\"},
		{"\xed\xa0\x80", "\xe2\x80"},
		{`1e999`, "🦜"},
	} {
		f.Add([]byte(s.raw), s.text)
	}
	f.Fuzz(func(t *testing.T, raw []byte, text string) {
		c := &wire.Chunk{
			SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 1, Seq: 1,
			Provider: text, Model: text, Event: text, Raw: raw,
			Delta: &wire.Delta{
				Text:         text,
				ToolCalls:    []wire.ToolCallDelta{{Index: 0, Start: true, Name: text, Arguments: text, End: true}},
				FinishReason: wire.FinishStop, RawFinishReason: text,
			},
			Failure: text,
		}
		b := c.AppendJSON(nil)
		if !json.Valid(b) || !utf8.Valid(b) {
			t.Fatalf("AppendJSON(raw %q, text %q) = %q; not valid UTF-8 JSON", raw, text, b)
		}
		var back wire.Chunk
		if err := wire.JSON.Unmarshal(b, &back); err != nil {
			t.Fatalf("JSON.Unmarshal(%q) = %v", b, err)
		}
		wantRaw := []byte(string([]rune(string(raw)))) // invalid bytes become U+FFFD
		if !bytes.Equal(back.Raw, wantRaw) {
			t.Errorf("JSON round trip of raw %q = %q; want %q", raw, back.Raw, wantRaw)
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
		if !bytes.Equal(mback.Raw, raw) || mback.Delta == nil || mback.Delta.Text != text {
			t.Errorf("msgpack round trip of raw %q, text %q = %q, %+v; want them unchanged", raw, text, mback.Raw, mback.Delta)
		}
	})
}

func cmpOr(m map[string]any) map[string]any {
	if len(m) == 0 {
		return map[string]any{}
	}
	return m
}

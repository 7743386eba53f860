package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// hostileJSON wraps a tool parameters value (JSON text) in a request.
func hostileJSON(params string) []byte {
	return []byte(`{"session_id":"s1","turn_id":"t1","input":[{"role":"user","content":"hi"}],` +
		`"tools":[{"name":"x","parameters":` + params + `}]}`)
}

// mp builds msgpack by hand: each argument is raw bytes or a string
// written as a msgpack str.
func mp(parts ...any) []byte {
	var b []byte
	for _, p := range parts {
		switch p := p.(type) {
		case []byte:
			b = append(b, p...)
		case byte:
			b = append(b, p)
		case string:
			b = appendMPStr(b, p)
		default:
			panic(fmt.Sprintf("mp: %T", p))
		}
	}
	return b
}

func appendMPStr(b []byte, s string) []byte {
	switch {
	case len(s) < 32:
		b = append(b, 0xa0|byte(len(s)))
	case len(s) < 256:
		b = append(b, 0xd9, byte(len(s)))
	default:
		b = append(b, 0xda, byte(len(s)>>8), byte(len(s)))
	}
	return append(b, s...)
}

// hostileMsgpack wraps a tool parameters value (msgpack) in a request.
func hostileMsgpack(params []byte) []byte {
	return mp(byte(0x84), "session_id", "s1", "turn_id", "t1",
		"input", byte(0x91), byte(0x82), "role", "user", "content", "hi",
		"tools", byte(0x91), byte(0x82), "name", "x", "parameters", params)
}

// TestUnmarshalStrictHostile feeds the strict decoders hostile requests:
// each must be rejected by the pre-pass, quickly and with bounded memory,
// with the documented reason and the path of the problem.
func TestUnmarshalStrictHostile(t *testing.T) {
	const million = 1_000_000
	// Openers only, as an attacker would send them: the closers would
	// double the size, and the pre-pass stops at level 65 anyway.
	deepArraysJSON := hostileJSON(`{"a":` + strings.Repeat("[", million))
	deepMapsJSON := hostileJSON(strings.Repeat(`{"a":`, 200_000))
	deepArraysMP := hostileMsgpack(append(mp(byte(0x81), "a"), bytes.Repeat([]byte{0x91}, million)...))
	deepArraysMP = append(deepArraysMP, 0xc0)
	deepMapsMP := hostileMsgpack(append(bytes.Repeat(mp(byte(0x81), "a"), 300_000), 0xc0))
	wideJSON := hostileJSON(`{"a":[` + strings.Repeat("0,", 150_000) + `0]}`)
	wideKeysJSON := func() []byte {
		var b strings.Builder
		b.WriteString("{")
		for i := range 100_010 {
			fmt.Fprintf(&b, `"%x":0,`, i)
		}
		b.WriteString(`"end":0}`)
		return hostileJSON(b.String())
	}()
	// An array32 claiming 200,000 nils, all present: rejected at its header.
	wideMP := hostileMsgpack(append(mp(byte(0x81), "a", []byte{0xdd, 0x00, 0x03, 0x0d, 0x40}), make([]byte, 200_000)...))
	for i := len(wideMP) - 200_000; i < len(wideMP); i++ {
		wideMP[i] = 0xc0
	}
	big := []byte(`{"session_id":"s1","turn_id":"t1","input":[{"role":"user","content":"` + strings.Repeat("x", 1<<20) + `"}]}`)

	tests := []struct {
		name       string
		msgpack    bool
		in         []byte
		wantReason string
		wantField  string // a prefix when it ends with "*"
	}{
		{"json deep arrays (1,000,000 levels)", false, deepArraysJSON, ReasonTooLarge, "tools[0].parameters.a[0][0][0]*"},
		{"json deep maps (200,000 levels)", false, deepMapsJSON, ReasonTooLarge, "tools[0].parameters.a.a.*"},
		{"msgpack deep arrays (1,000,000 levels)", true, deepArraysMP, ReasonTooLarge, "tools[0].parameters.a[0][0]*"},
		{"msgpack deep maps (300,000 levels)", true, deepMapsMP, ReasonTooLarge, "tools[0].parameters.a.a.*"},
		{"json element bomb", false, wideJSON, ReasonTooLarge, "tools[0].parameters.a[*"},
		{"json key bomb", false, wideKeysJSON, ReasonTooLarge, "tools[0].parameters.*"},
		{"msgpack element bomb", true, wideMP, ReasonTooLarge, "tools[0].parameters.a"},
		{"json over 1 MiB", false, big, ReasonTooLarge, ""},

		{"json duplicate top-level key", false, []byte(`{"session_id":"s1","turn_id":"t1","session_id":"s2","input":[]}`), ReasonMalformed, "session_id"},
		{"json duplicate key in parameters", false, hostileJSON(`{"type":"object","properties":{"a":{},"b":{},"a":{"type":"string"}}}`), ReasonMalformed, "tools[0].parameters.properties.a"},
		{"json duplicate key by escape", false, hostileJSON(`{"type":"object","\u0074ype":"array"}`), ReasonMalformed, "tools[0].parameters.type"},
		{"json duplicate key past 16 keys", false, hostileJSON(`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":0,"k11":1,"k12":2,"k13":3,"k14":4,"k15":5,"k16":6,"k17":7,"k3":8}`), ReasonMalformed, "tools[0].parameters.k3"},
		{"json case-folded key", false, []byte(`{"Session_ID":"s1","turn_id":"t1","input":[]}`), ReasonUnknownField, "Session_ID"},
		{"json case-folded nested key", false, []byte(`{"session_id":"s1","input":[{"role":"user","CONTENT":"hi"}]}`), ReasonUnknownField, "input[0].CONTENT"},
		{"json unknown field", false, []byte(`{"session_id":"s1","sesion_id":"s1","input":[]}`), ReasonUnknownField, "sesion_id"},
		{"json unknown nested field", false, []byte(`{"session_id":"s1","input":[{"role":"user","content":"hi"},{"role":"user","author":"me"}]}`), ReasonUnknownField, "input[1].author"},
		{"json unknown budget", false, []byte(`{"session_id":"s1","input":[],"budgets":{"max_tokens":1}}`), ReasonUnknownField, "budgets.max_tokens"},
		{"json invalid utf-8 in content", false, []byte("{\"session_id\":\"s1\",\"input\":[{\"role\":\"user\",\"content\":\"caf\xe9\"}]}"), ReasonMalformed, "input[0].content"},
		{"json invalid utf-8 in a parameters key", false, hostileJSON("{\"properties\":{\"\xff\":{}}}"), ReasonMalformed, "tools[0].parameters.properties"},
		{"json unpaired surrogate", false, []byte(`{"session_id":"s1","input":[{"role":"user","content":"\ud800x"}]}`), ReasonMalformed, "input[0].content"},
		{"json unpaired low surrogate", false, []byte(`{"session_id":"s1","system":"\udc00"}`), ReasonMalformed, "system"},
		{"json trailing data", false, []byte(`{"session_id":"s1"} {}`), ReasonMalformed, ""},
		{"json syntax error names the place", false, []byte(`{"session_id":"s1","input":[{"role":"user","content":"hi"},]}`), ReasonMalformed, "input[1]"},
		{"json wrong type", false, []byte(`{"session_id":1}`), ReasonMalformed, "session_id"},

		{"msgpack duplicate key", true, mp(byte(0x82), "session_id", "s1", "session_id", "s2"), ReasonMalformed, "session_id"},
		{"msgpack duplicate key in parameters", true, hostileMsgpack(mp(byte(0x81), "properties", byte(0x82), "a", byte(0xc0), "a", byte(0xc0))), ReasonMalformed, "tools[0].parameters.properties.a"},
		{"msgpack case-folded key", true, mp(byte(0x81), "Session_ID", "s1"), ReasonUnknownField, "Session_ID"},
		{"msgpack unknown nested field", true, mp(byte(0x81), "input", byte(0x91), byte(0x81), "author", "me"), ReasonUnknownField, "input[0].author"},
		{"msgpack invalid utf-8 in content", true, mp(byte(0x81), "input", byte(0x91), byte(0x82), "role", "user", "content", "caf\xe9"), ReasonMalformed, "input[0].content"},
		{"msgpack invalid utf-8 in a parameters key", true, hostileMsgpack(mp(byte(0x81), "\xff\xfe", byte(0xc0))), ReasonMalformed, "tools[0].parameters"},
		{"msgpack integer key", true, hostileMsgpack(mp(byte(0x81), byte(0x01), byte(0xc0))), ReasonMalformed, "tools[0].parameters"},
		{"msgpack array for a struct", true, mp(byte(0x81), "budgets", byte(0x94), byte(1), byte(2), byte(3), byte(4)), ReasonMalformed, "budgets"},
		{"msgpack unknown extension", true, mp(byte(0x81), "system", []byte{0xd4, 0x05, 0x00}), ReasonMalformed, "system"},
		{"msgpack trailing byte", true, mp(byte(0x81), "session_id", "s1", byte(0xc0)), ReasonMalformed, ""},
		{"msgpack truncated", true, mp(byte(0x82), "session_id", "s1"), ReasonMalformed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			codec := JSON
			if tt.msgpack {
				codec = Msgpack
			}
			var r TurnRequest
			err := codec.UnmarshalStrict(tt.in, &r)
			checkScanError(t, codec.ContentType()+".UnmarshalStrict", err, tt.wantReason, tt.wantField)
			if tt.wantReason == ReasonTooLarge && tt.wantField != "" {
				// The lenient decoders of readers stop there too.
				var r TurnRequest
				err := codec.Unmarshal(tt.in, &r)
				checkScanError(t, codec.ContentType()+".Unmarshal", err, tt.wantReason, tt.wantField)
			}
		})
	}
}

// checkScanError checks a pre-pass or strict decoder error; a wanted field
// ending in "*" is a prefix.
func checkScanError(t *testing.T, call string, err error, wantReason, wantField string) {
	t.Helper()
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("%s = %v; want a *ValidationError with reason %s", call, err, wantReason)
	}
	fieldOK := ve.Field == wantField
	if prefix, ok := strings.CutSuffix(wantField, "*"); ok {
		fieldOK = strings.HasPrefix(ve.Field, prefix)
	}
	if ve.Reason != wantReason || !fieldOK {
		t.Errorf("%s = %v (reason %q, field %q); want reason %q, field %q", call, err, ve.Reason, ve.Field, wantReason, wantField)
	}
	if len(ve.Field) > maxPathLen {
		t.Errorf("%s field %q is %d bytes; want at most %d", call, ve.Field, len(ve.Field), maxPathLen)
	}
}

// TestUnmarshalStrictUnchanged checks that valid requests decode exactly as
// the plain decoders decode them.
func TestUnmarshalStrictUnchanged(t *testing.T) {
	full := validRequest()
	full.Tools[0].Parameters["properties"].(map[string]any)["n"] = map[string]any{"type": "number", "maximum": 1e300, "enum": []any{1.5, -0.0, "x", nil, true}}
	full.Input[1].Content = "héllo 🦜 \u2028 <b>&amp;</b> \"q\" \\ \t"
	reqs := []*TurnRequest{
		full,
		{SessionID: "s1", Input: []InputMessage{{Role: RoleUser, Content: ""}}},
		{SessionID: "s1", Input: []InputMessage{{Role: RoleUser}}, Tools: []Tool{{Name: "t", Parameters: map[string]any{}}}, Budgets: &Budgets{}},
	}
	for i, in := range reqs {
		jb, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		// Escapes, white space and a valid surrogate pair a client may send.
		escaped := bytes.Replace(jb, []byte(`"hi"`), []byte(` "\u0068\ud83e\udd9c" `), 1)
		for _, doc := range [][]byte{jb, escaped} {
			var want, got TurnRequest
			if err := json.Unmarshal(doc, &want); err != nil {
				t.Fatal(err)
			}
			if err := JSON.UnmarshalStrict(doc, &got); err != nil {
				t.Fatalf("JSON.UnmarshalStrict(request %d: %s) = %v; want nil", i, doc, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("JSON.UnmarshalStrict(request %d) = %+v; want %+v (json.Unmarshal)", i, got, want)
			}
		}
		mb, err := Msgpack.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		var want, got TurnRequest
		dec := msgpack.NewDecoder(bytes.NewReader(mb))
		dec.SetCustomStructTag("json")
		dec.SetMapDecoder(decodeStringMap)
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if err := Msgpack.UnmarshalStrict(mb, &got); err != nil {
			t.Fatalf("Msgpack.UnmarshalStrict(request %d) = %v; want nil", i, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Msgpack.UnmarshalStrict(request %d) = %+v; want %+v (msgpack decoder)", i, got, want)
		}
	}
}

// TestUnmarshalStrictWithin checks that a worker's limits replace the
// defaults, and that the strict decoders accept a request right at them.
func TestUnmarshalStrictWithin(t *testing.T) {
	doc := hostileJSON(`{"a":[[[1,2]]]}`) // depth 7, 16 values
	mdoc := hostileMsgpack(mp(byte(0x81), "a", byte(0x91), byte(0x91), byte(0x92), byte(1), byte(2)))
	tests := []struct {
		name       string
		lim        Limits
		wantReason string
		wantField  string
	}{
		{"defaults", Limits{}, "", ""},
		{"at every limit", Limits{MaxDepth: 7, MaxElements: 16, MaxRequestBytes: len(doc)}, "", ""},
		{"one level too deep", Limits{MaxDepth: 6}, ReasonTooLarge, "tools[0].parameters.a[0][0]"},
		// msgpack counts declared elements at the array header.
		{"one value too many", Limits{MaxElements: 15}, ReasonTooLarge, "tools[0].parameters.a[0][0]*"},
		{"one byte too many", Limits{MaxRequestBytes: len(doc) - 1}, ReasonTooLarge, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, c := range []struct {
				codec Codec
				in    []byte
			}{{JSON, doc}, {Msgpack, mdoc}} {
				lim := tt.lim
				if lim.MaxRequestBytes != 0 && c.codec == Msgpack {
					lim.MaxRequestBytes += len(mdoc) - len(doc)
				}
				var r TurnRequest
				err := UnmarshalStrictWithin(c.codec, c.in, &r, lim)
				call := fmt.Sprintf("UnmarshalStrictWithin(%s, %+v)", c.codec.ContentType(), lim)
				if tt.wantReason == "" {
					if err != nil {
						t.Errorf("%s = %v; want nil", call, err)
					}
					continue
				}
				checkScanError(t, call, err, tt.wantReason, tt.wantField)
			}
		})
	}
}

func TestCheckJSON(t *testing.T) {
	tests := []struct {
		name       string
		in         string
		lim        ScanLimits
		wantReason string // "" means valid
		wantField  string
	}{
		{name: "object", in: `{"city":"Paris","n":[1,2.5e-3,-0,true,false,null,{}]}`},
		{name: "scalar", in: ` "x" `},
		{name: "number", in: `-12.5E+3`},
		{name: "escapes", in: `"\"\\\/\b\f\n\r\t\u00e9\ud83e\udd9c"`},
		{name: "deep at the limit", in: strings.Repeat("[", 64) + strings.Repeat("]", 64)},
		{name: "custom depth", in: `[[1]]`, lim: ScanLimits{MaxDepth: 2}},
		{name: "custom elements", in: `[1,2]`, lim: ScanLimits{MaxElements: 3}},

		{name: "too deep", in: strings.Repeat("[", 65) + strings.Repeat("]", 65), wantReason: ReasonTooLarge, wantField: strings.Repeat("[0]", 42)[:40] + "..." + strings.Repeat("[0]", 64)[192-85:]},
		{name: "custom depth exceeded", in: `{"a":[{"b":1}]}`, lim: ScanLimits{MaxDepth: 2}, wantReason: ReasonTooLarge, wantField: "a[0]"},
		{name: "custom elements exceeded", in: `[1,2,3]`, lim: ScanLimits{MaxElements: 3}, wantReason: ReasonTooLarge, wantField: "[2]"},
		{name: "custom size exceeded", in: `[1,2,3]`, lim: ScanLimits{MaxBytes: 6}, wantReason: ReasonTooLarge},
		{name: "duplicate key", in: `{"a":{"b":1,"b":2}}`, wantReason: ReasonMalformed, wantField: "a.b"},
		{name: "odd key quoted", in: `{"a b":{"c.d":[0,{"":1,"":2}]}}`, wantReason: ReasonMalformed, wantField: `["a b"]["c.d"][1][""]`},
		{name: "long key cut", in: `{"` + strings.Repeat("k", 40) + `":[1,}`, wantReason: ReasonMalformed, wantField: `["` + strings.Repeat("k", 32) + `..."][1]`},
		{name: "key with control escapes", in: `{"\u0001\n":"\xff"}`, wantReason: ReasonMalformed, wantField: `["\x01\n"]`},
		{name: "invalid utf-8", in: "[\"ok\",\"\xc3\"]", wantReason: ReasonMalformed, wantField: "[1]"},
		{name: "overlong utf-8", in: "\"\xc0\xaf\"", wantReason: ReasonMalformed},
		{name: "encoded surrogate", in: "\"\xed\xa0\x80\"", wantReason: ReasonMalformed},
		{name: "unpaired surrogate then escape", in: `"\ud800\n"`, wantReason: ReasonMalformed},
		{name: "two high surrogates", in: `"\ud800\ud800"`, wantReason: ReasonMalformed},
		{name: "control character", in: "\"a\tb\"", wantReason: ReasonMalformed},
		{name: "bad escape", in: `"\x"`, wantReason: ReasonMalformed},
		{name: "short unicode escape", in: `"\u12"`, wantReason: ReasonMalformed},
		{name: "leading zero", in: `01`, wantReason: ReasonMalformed},
		{name: "bare minus", in: `-`, wantReason: ReasonMalformed},
		{name: "dot without digits", in: `1.`, wantReason: ReasonMalformed},
		{name: "exponent without digits", in: `1e+`, wantReason: ReasonMalformed},
		{name: "bad literal", in: `nul`, wantReason: ReasonMalformed},
		{name: "empty", in: ``, wantReason: ReasonMalformed},
		{name: "only space", in: ` `, wantReason: ReasonMalformed},
		{name: "unclosed", in: `{"a":[1`, wantReason: ReasonMalformed, wantField: "a[0]"},
		{name: "missing colon", in: `{"a" 1}`, wantReason: ReasonMalformed, wantField: "a"},
		{name: "key not a string", in: `{1:2}`, wantReason: ReasonMalformed},
		{name: "mismatched close", in: `[1}`, wantReason: ReasonMalformed, wantField: "[0]"},
		{name: "trailing comma", in: `[1,]`, wantReason: ReasonMalformed, wantField: "[1]"},
		{name: "second value", in: `{} {}`, wantReason: ReasonMalformed},
		{name: "non-breaking space", in: "1\u00a0", wantReason: ReasonMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckJSON([]byte(tt.in), tt.lim)
			call := fmt.Sprintf("CheckJSON(%q, %+v)", tt.in, tt.lim)
			if tt.wantReason == "" {
				if err != nil {
					t.Errorf("%s = %v; want nil", call, err)
				}
				if !json.Valid([]byte(tt.in)) {
					t.Errorf("json.Valid(%q) = false, but CheckJSON accepts it", tt.in)
				}
				return
			}
			checkScanError(t, call, err, tt.wantReason, tt.wantField)
		})
	}
}

// TestCheckJSONMillionDeep checks that CheckJSON rejects a million levels
// of nesting, which encoding/json's own limit (10,000) would also refuse
// but only after allocating for each level.
func TestCheckJSONMillionDeep(t *testing.T) {
	for _, open := range []string{"[", `{"a":`} {
		in := []byte(strings.Repeat(open, 1_000_000))
		err := CheckJSON(in, ScanLimits{MaxBytes: len(in)})
		want := "[0][0]*"
		if open != "[" {
			want = "a.a.*"
		}
		checkScanError(t, "CheckJSON(million levels of "+open+")", err, ReasonTooLarge, want)
	}
}

func TestCheckValue(t *testing.T) {
	nest := func(n int, leaf any, wrap func(any) any) any {
		v := leaf
		for range n {
			v = wrap(v)
		}
		return v
	}
	inSlice := func(v any) any { return []any{v} }
	inMap := func(v any) any { return map[string]any{"a": v} }
	cyclic := map[string]any{"type": "object"}
	cyclic["self"] = cyclic
	var loop any
	loop = &loop
	type pair struct {
		Name  string
		Inner any
		priv  any
	}
	tests := []struct {
		name       string
		v          any
		lim        ScanLimits
		wantReason string
		wantField  string
	}{
		{name: "nil", v: nil},
		{name: "scalar", v: 1.5},
		{name: "schema", v: validRequest().Tools[0].Parameters},
		{name: "64 levels", v: nest(63, map[string]any{}, inMap)},
		{name: "typed containers", v: map[string][]int{"a": {1, 2}}},
		{name: "bytes are one value", v: []byte("0123456789"), lim: ScanLimits{MaxElements: 1}},
		{name: "struct", v: pair{Name: "x", Inner: []any{1}, priv: nest(100, 1, inSlice)}},
		{name: "pointers", v: &pair{Inner: &[]any{1}}},

		{name: "million slices", v: nest(1_000_000, 1, inSlice), wantReason: ReasonTooLarge, wantField: "[0][0]*"},
		{name: "deep maps", v: nest(10_000, 1, inMap), wantReason: ReasonTooLarge, wantField: "a.a.a.*"},
		{name: "65 levels", v: nest(64, map[string]any{}, inMap), wantReason: ReasonTooLarge, wantField: "a" + strings.Repeat(".a", 63)},
		{name: "cycle", v: cyclic, wantReason: ReasonTooLarge, wantField: "self.self.*"},
		{name: "pointer cycle", v: loop, wantReason: ReasonTooLarge},
		{name: "wide slice", v: make([]any, 100_000), wantReason: ReasonTooLarge},
		{name: "custom elements", v: map[string]any{"a": []any{1, 2}}, lim: ScanLimits{MaxElements: 3}, wantReason: ReasonTooLarge, wantField: "a"},
		{name: "custom depth", v: map[string]any{"a b": []any{[]any{1}}}, lim: ScanLimits{MaxDepth: 2}, wantReason: ReasonTooLarge, wantField: `["a b"][0]`},
		{name: "struct field", v: pair{Inner: nest(100, 1, inSlice)}, wantReason: ReasonTooLarge, wantField: "Inner[0]*"},
		{name: "non-string keys", v: map[int]any{7: nest(100, 1, inSlice)}, wantReason: ReasonTooLarge, wantField: "7[0]*"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckValue(tt.v, tt.lim)
			call := fmt.Sprintf("CheckValue(%s, %+v)", tt.name, tt.lim)
			if tt.wantReason == "" {
				if err != nil {
					t.Errorf("%s = %v; want nil", call, err)
				}
				return
			}
			checkScanError(t, call, err, tt.wantReason, tt.wantField)
		})
	}
}

// TestDeepParametersBuiltInGo checks that a request built in Go (never
// decoded) with deep tool parameters is refused by Validate and by both
// encoders instead of overflowing the stack in json.Marshal.
func TestDeepParametersBuiltInGo(t *testing.T) {
	var deep any = 1
	for range 1_000_000 {
		deep = []any{deep}
	}
	r := validRequest()
	r.Tools[1].Parameters = map[string]any{"type": "object", "default": deep}
	err := r.Validate("s1", Limits{})
	checkScanError(t, "Validate(million-deep parameters)", err, ReasonTooLarge, "tools[1].parameters.default[0]*")
	for _, c := range []Codec{JSON, Msgpack} {
		_, err := c.Marshal(r)
		checkScanError(t, c.ContentType()+".Marshal(million-deep parameters)", err, ReasonTooLarge, "tools[1].parameters.default[0]*")
	}
	ev := &SessionEvent{Type: EventTurnFailed, SessionID: "s1", Payload: map[string]any{"x": deep}}
	_, err = JSON.Marshal(ev)
	checkScanError(t, "JSON.Marshal(million-deep payload)", err, ReasonTooLarge, "payload.x[0]*")
}

func TestBudgetLimits(t *testing.T) {
	tests := []struct {
		name       string
		b          Budgets
		wantReason string
		wantField  string
	}{
		{name: "zero", b: Budgets{}},
		{name: "maxima", b: Budgets{MaxIterations: MaxBudgetCount, MaxToolCalls: MaxBudgetCount, MaxRepeatedToolFailures: MaxBudgetCount, WallClockMS: MaxBudgetWallClockMS}},
		{name: "wall clock 1e13", b: Budgets{WallClockMS: 1e13}, wantReason: ReasonInvalidBudgets, wantField: "budgets.wall_clock_ms"},
		{name: "wall clock max+1", b: Budgets{WallClockMS: MaxBudgetWallClockMS + 1}, wantReason: ReasonInvalidBudgets, wantField: "budgets.wall_clock_ms"},
		{name: "wall clock max int64", b: Budgets{WallClockMS: 1<<63 - 1}, wantReason: ReasonInvalidBudgets, wantField: "budgets.wall_clock_ms"},
		{name: "wall clock min int64", b: Budgets{WallClockMS: -1 << 63}, wantReason: ReasonInvalidBudgets, wantField: "budgets.wall_clock_ms"},
		{name: "iterations max+1", b: Budgets{MaxIterations: MaxBudgetCount + 1}, wantReason: ReasonInvalidBudgets, wantField: "budgets.max_iterations"},
		{name: "tool calls max+1", b: Budgets{MaxToolCalls: MaxBudgetCount + 1}, wantReason: ReasonInvalidBudgets, wantField: "budgets.max_tool_calls"},
		{name: "repeated failures huge", b: Budgets{MaxRepeatedToolFailures: 1 << 40}, wantReason: ReasonInvalidBudgets, wantField: "budgets.max_repeated_tool_failures"},
		{name: "negative count", b: Budgets{MaxToolCalls: -1}, wantReason: ReasonInvalidBudgets, wantField: "budgets.max_tool_calls"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := validRequest()
			r.Budgets = &tt.b
			checkValidation(t, fmt.Sprintf("Validate(budgets %+v)", tt.b), r.Validate("s1", Limits{}), tt.wantReason, tt.wantField)
		})
	}
	// From the wire: a JSON integer that fits int64 but not a duration.
	doc := `{"session_id":"s1","turn_id":"t1","input":[{"role":"user","content":"hi"}],"budgets":{"wall_clock_ms":10000000000000}}`
	var r TurnRequest
	if err := JSON.UnmarshalStrict([]byte(doc), &r); err != nil {
		t.Fatalf("JSON.UnmarshalStrict(%s) = %v", doc, err)
	}
	checkValidation(t, "Validate(decoded wall_clock_ms 1e13)", r.Validate("s1", Limits{}), ReasonInvalidBudgets, "budgets.wall_clock_ms")
}

func TestParseSubmit(t *testing.T) {
	def := Subjects{}
	acme := Subjects{Prefix: "acme.turn"}
	tests := []struct {
		s       Subjects
		in      string
		want    string
		wantErr bool
	}{
		{def, "turn.submit.s1", "s1", false},
		{def, "turn.submit." + strings.Repeat("S", 128), strings.Repeat("S", 128), false},
		{def, "turn.submit.A-z_09", "A-z_09", false},
		{acme, "acme.turn.submit.s1", "s1", false},
		{def, "turn.submit.a.b", "", true},
		{def, "turn.submit.s1.", "", true},
		{def, "turn.submit.", "", true},
		{def, "turn.submit", "", true},
		{def, "turn.submit..", "", true},
		{def, "turn.submit.a%b", "", true},
		{def, "turn.submit.*", "", true},
		{def, "turn.submit.>", "", true},
		{def, "turn.submit." + strings.Repeat("s", 129), "", true},
		{def, "turn.cancel.s1", "", true},
		{def, "other.submit.s1", "", true},
		{def, "acme.turn.submit.s1", "", true},
		{acme, "turn.submit.s1", "", true},
		{def, "", "", true},
	}
	for _, tt := range tests {
		got, err := tt.s.ParseSubmit(tt.in)
		call := fmt.Sprintf("Subjects{%q}.ParseSubmit(%q)", tt.s.Prefix, tt.in)
		if !tt.wantErr {
			if err != nil || got != tt.want {
				t.Errorf("%s = %q, %v; want %q, nil", call, got, err, tt.want)
			}
			continue
		}
		if got != "" {
			t.Errorf("%s session = %q; want \"\" with the error", call, got)
		}
		checkValidation(t, call, err, ReasonInvalidSubject, "subject")
	}
}

// TestJSONMarshalNoHTMLEscape checks that records are written without HTML
// escaping, so a result full of "<" keeps its size.
func TestJSONMarshalNoHTMLEscape(t *testing.T) {
	content := strings.Repeat("<a href=\"x\">&</a>", 400_000/17)
	res := &ToolResult{SessionID: "s1", TurnID: "t1", CallID: "c1", Token: "k", Content: content}
	b, err := JSON.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	escapedQuotes := strings.Count(content, `"`) // each becomes \"
	if want := len(content) + escapedQuotes + len(`{"session_id":"s1","turn_id":"t1","call_id":"c1","token":"k","content":""}`); len(b) != want {
		t.Errorf("len(JSON.Marshal(400 KB of HTML)) = %d; want %d", len(b), want)
	}
	if bytes.Contains(b, []byte(`\u003c`)) || b[len(b)-1] != '}' {
		t.Errorf("JSON.Marshal = %.80s...%s; want no HTML escapes and no trailing newline", b, b[len(b)-20:])
	}
	var back ToolResult
	if err := JSON.UnmarshalStrict(b, &back); err != nil || back.Content != content {
		t.Errorf("JSON.UnmarshalStrict(marshalled result) = %v, content equal %v; want nil, true", err, back.Content == content)
	}
}

func TestPaths(t *testing.T) {
	tests := []struct {
		keys []string // "" entries are indexes 0
		want string
	}{
		{[]string{"a", "b"}, "a.b"},
		{[]string{"$defs", "x-y_z"}, "$defs.x-y_z"},
		{[]string{"a b", "c"}, `["a b"].c`},
		{[]string{"tools", "", "parameters"}, "tools[0].parameters"},
		{[]string{"é"}, `["\u00e9"]`},
		{[]string{"\xff"}, `["\xff"]`},
		{[]string{strings.Repeat("k", 33)}, `["` + strings.Repeat("k", 32) + `..."]`},
	}
	for _, tt := range tests {
		var p pathBuilder
		for _, k := range tt.keys {
			if k == "" {
				p.index(0)
			} else {
				p.key([]byte(k))
			}
		}
		if got := p.String(); got != tt.want {
			t.Errorf("path of %q = %s; want %s", tt.keys, got, tt.want)
		}
	}
	long := strings.Repeat("abcdefgh.", 30)
	if got := shortPath(long); len(got) != maxPathLen || !strings.HasPrefix(got, long[:40]+"...") || !strings.HasSuffix(long, got[43:]) {
		t.Errorf("shortPath(%d bytes) = %q; want %d bytes, head and tail kept", len(long), got, maxPathLen)
	}
}

// TestShapes checks the keys the strict pre-pass allows for each record.
func TestShapes(t *testing.T) {
	tests := []struct {
		v    any
		want []string
	}{
		{&TurnRequest{}, []string{"budgets", "input", "route", "session_id", "system", "tools", "turn_id"}},
		{&Chunk{}, []string{"attempt", "delta", "event", "failure", "http_status", "marker", "model", "provider", "provider_delay_ms", "request_id", "seq", "session_id", "step", "turn_id"}},
		{&Cancel{}, []string{"turn_id"}},
	}
	for _, tt := range tests {
		s := shapeOf(tt.v)
		var got []string
		for k := range s.fields {
			got = append(got, k)
		}
		if !sameSet(got, tt.want) {
			t.Errorf("shapeOf(%T) fields = %v; want %v", tt.v, got, tt.want)
		}
	}
	if s := shapeOf(new(TurnRequest)).fields["tools"].elem.fields["parameters"]; s.kind != shapeMap || s.elem != anyShape {
		t.Errorf("shape of tools[].parameters = %+v; want a free-form map", s)
	}
	if s := shapeOf(new(Message)).fields["time"]; s != anyShape {
		t.Errorf("shape of Message.time = %+v; want free-form (time.Time decodes itself)", s)
	}
	if s := shapeOf(new(map[string]any)); s.kind != shapeMap {
		t.Errorf("shapeOf(*map[string]any) = %+v; want a map", s)
	}
	type self struct {
		Next *self `json:"next"`
		Skip int   `json:"-"`
	}
	if s := shapeOf(new(self)); s.fields["next"] != s || len(s.fields) != 1 {
		t.Errorf("shapeOf(self-referencing struct) = %+v; want itself as next", s)
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]bool{}
	for _, s := range a {
		m[s] = true
	}
	for _, s := range b {
		if !m[s] {
			return false
		}
	}
	return true
}

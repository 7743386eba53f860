package hostile

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/turnstream/turnstream/pkg/wire"
)

// Request is one hostile turn request and the rejection it must get.
type Request struct {
	// Name says what the request attacks.
	Name string
	// ContentType is the request's Content-Type header, "" for JSON.
	ContentType string
	// Body is the request, at most about 1 MB: it fits the server's
	// default 1 MiB max payload.
	Body []byte
	// Reason is the turn.rejected reason the worker must give.
	Reason string
	// Field is the field the rejection must name, "" when any.
	Field string
}

// Requests returns the request bombs, each near 1 MB; the i-th is of the
// session session(i), with turn id "t1".
func Requests(session func(i int) string) []Request {
	i := -1
	next := func() string { i++; return session(i) }
	return []Request{
		{Name: "json arrays nested 480k deep", Body: withParameters(next(), `{"type":"object","p":`+strings.Repeat("[", 480_000)+strings.Repeat("]", 480_000)+`}`), Reason: wire.ReasonTooLarge},
		{Name: "json maps nested 160k deep", Body: withParameters(next(), `{"type":"object","p":`+strings.Repeat(`{"a":`, 160_000)+"1"+strings.Repeat("}", 160_000)+`}`), Reason: wire.ReasonTooLarge},
		{Name: "msgpack arrays nested a million deep", ContentType: wire.ContentTypeMsgpack, Body: msgpackWithNested(next(), append(bytes.Repeat([]byte{0x91}, 1_000_000), 0xc0)), Reason: wire.ReasonTooLarge},
		{Name: "msgpack maps nested 330k deep", ContentType: wire.ContentTypeMsgpack, Body: msgpackWithNested(next(), append(bytes.Repeat([]byte{0x81, 0xa1, 'a'}, 330_000), 0xc0)), Reason: wire.ReasonTooLarge},
		{Name: "json element count bomb", Body: withParameters(next(), `{"type":"object","p":[`+strings.Repeat("0,", 480_000)+`0]}`), Reason: wire.ReasonTooLarge},
		{Name: "msgpack element count bomb", ContentType: wire.ContentTypeMsgpack, Body: msgpackWithNested(next(), append([]byte{0xdd, 0x00, 0x0f, 0x42, 0x40}, bytes.Repeat([]byte{0x00}, 1_000_000)...)), Reason: wire.ReasonTooLarge},
		{Name: "schema of 36k properties", Body: withParameters(next(), manyProperties(36_000)), Reason: wire.ReasonTooLarge},
	}
}

// HeavySchema is the costliest tool parameter schema within the worker's
// default schema limits (5,000 JSON values): 4,980 properties, each an
// empty schema; the compiler's work grows with the square of the
// subschemas. salt makes it unique, so that no cache saves its compile.
func HeavySchema(salt string) map[string]any {
	props := make(map[string]any, 4_980)
	for i := range 4_980 {
		props[strconv.Itoa(i)] = map[string]any{}
	}
	return map[string]any{"type": "object", "description": salt, "properties": props}
}

func manyProperties(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d":{"type":"string"}`, i)
	}
	b.WriteString("}}")
	return b.String()
}

// withParameters is a JSON request of session whose one tool has params.
func withParameters(session, params string) []byte {
	return []byte(`{"session_id":"` + session + `","turn_id":"t1","input":[{"role":"user","content":"hi"}],"tools":[{"name":"x","parameters":` + params + `}]}`)
}

// msgpackWithNested is a msgpack request of session whose one tool's
// parameters hold the raw msgpack value nested under "p".
func msgpackWithNested(session string, nested []byte) []byte {
	const hole = "__HOLE__"
	req := wire.TurnRequest{SessionID: session, TurnID: "t1", Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "hi"}},
		Tools: []wire.Tool{{Name: "x", Parameters: map[string]any{"type": "object", "p": hole}}}}
	b, err := wire.Msgpack.Marshal(&req)
	if err != nil {
		panic("hostile: encoding a fixed request: " + err.Error()) // a programmer error
	}
	h, err := msgpack.Marshal(hole)
	if err != nil {
		panic("hostile: " + err.Error())
	}
	i := bytes.Index(b, h)
	return append(append(append([]byte{}, b[:i]...), nested...), b[i+len(h):]...)
}

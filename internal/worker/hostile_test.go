package worker_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/pkg/wire"
)

// hostileRequest is one request an attacker publishes, and the outcome the
// worker must give it.
type hostileRequest struct {
	name        string
	subject     string // default turn.submit.<session>
	contentType string
	body        []byte
	// eventSession is where turn.rejected goes; default the session.
	eventSession string
	reason       string
	field        string // the field the rejection names, when it names one
}

// requestJSON is a valid request of session with the tools value spliced in.
func requestJSON(session, extra string) []byte {
	return []byte(`{"session_id":"` + session + `","turn_id":"t1","input":[{"role":"user","content":"hi"}]` + extra + `}`)
}

// requestMsgpack is a valid msgpack request of session whose first tool's
// parameters hold, under "p", the raw msgpack bytes nested.
func requestMsgpack(t *testing.T, session string, nested []byte) []byte {
	t.Helper()
	const hole = "__HOLE__"
	req := wire.TurnRequest{SessionID: session, TurnID: "t1", Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "hi"}},
		Tools: []wire.Tool{{Name: "x", Parameters: map[string]any{"type": "object", "p": hole}}}}
	b, err := wire.Msgpack.Marshal(&req)
	if err != nil {
		t.Fatal(err)
	}
	h, err := msgpack.Marshal(hole)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, h)
	if i < 0 {
		t.Fatal("hole not found in the encoded request")
	}
	return append(append(append([]byte{}, b[:i]...), nested...), b[i+len(h):]...)
}

// hostileRequests are the request cases of the hostile-input suite; each
// uses a session of its own.
func hostileRequests(t *testing.T) []hostileRequest {
	// Each fits the server's 1 MiB max payload.
	deepArrays := strings.Repeat("[", 400_000) + strings.Repeat("]", 400_000)
	deepMaps := strings.Repeat(`{"a":`, 150_000) + "1" + strings.Repeat("}", 150_000)
	elements := "[" + strings.Repeat("0,", 300_000) + "0]"
	nestedSchema := strings.Repeat(`{"type":"object","properties":{"a":`, 25) + `{"type":"string"}` + strings.Repeat("}}", 25)
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	tool := func(params string) string {
		return `,"tools":[{"name":"x","parameters":` + params + `}]`
	}
	return []hostileRequest{
		{name: "json arrays nested 400k deep", body: requestJSON("h-json-arrays", tool(`{"type":"object","p":`+deepArrays+`}`)), reason: wire.ReasonTooLarge},
		{name: "json maps nested 150k deep", body: requestJSON("h-json-maps", tool(`{"type":"object","p":`+deepMaps+`}`)), reason: wire.ReasonTooLarge},
		{name: "msgpack arrays nested 900k deep", contentType: wire.ContentTypeMsgpack,
			body: requestMsgpack(t, "h-mp-arrays", append(bytes.Repeat([]byte{0x91}, 900_000), 0xc0)), reason: wire.ReasonTooLarge},
		{name: "msgpack maps nested 300k deep", contentType: wire.ContentTypeMsgpack,
			body: requestMsgpack(t, "h-mp-maps", append(bytes.Repeat([]byte{0x81, 0xa1, 'a'}, 300_000), 0xc0)), reason: wire.ReasonTooLarge},
		{name: "element count bomb", body: requestJSON("h-elements", tool(`{"type":"object","p":`+elements+`}`)), reason: wire.ReasonTooLarge},
		{name: "duplicate key", body: []byte(`{"session_id":"h-dup","session_id":"h-dup","turn_id":"t1","input":[{"role":"user","content":"hi"}]}`), reason: wire.ReasonMalformed, field: "session_id"},
		{name: "duplicate key in a schema", body: requestJSON("h-dup-schema", tool(`{"type":"object","type":"object"}`)), reason: wire.ReasonMalformed, field: "tools[0].parameters.type"},
		{name: "case-folded key", body: []byte(`{"Session_ID":"h-case","turn_id":"t1","input":[{"role":"user","content":"hi"}]}`), eventSession: "h-case", reason: wire.ReasonUnknownField, field: "Session_ID"},
		{name: "invalid utf-8", body: []byte("{\"session_id\":\"h-utf8\",\"turn_id\":\"t1\",\"input\":[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]}"), reason: wire.ReasonMalformed, field: "input[0].content"},
		{name: "unknown field named", body: requestJSON("h-unknown", `,"budget":{}`), reason: wire.ReasonUnknownField, field: "budget"},
		{name: "schema nested past the schema depth", body: requestJSON("h-schema-deep", tool(nestedSchema)), reason: wire.ReasonTooLarge, field: "tools[0].parameters"},
		{name: "file ref", body: requestJSON("h-file-ref", tool(`{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`)), reason: wire.ReasonInvalidTool},
		{name: "fifo ref", body: requestJSON("h-fifo-ref", tool(`{"type":"object","properties":{"a":{"$ref":"file://`+fifo+`"}}}`)), reason: wire.ReasonInvalidTool},
		{name: "http ref", body: requestJSON("h-http-ref", tool(`{"type":"object","properties":{"a":{"$ref":"http://127.0.0.1:1/s.json"}}}`)), reason: wire.ReasonInvalidTool},
		{name: "wall clock overflowing a duration", body: requestJSON("h-wall", `,"budgets":{"wall_clock_ms":10000000000000}`), reason: wire.ReasonInvalidBudgets, field: "budgets.wall_clock_ms"},
		{name: "extra subject token", subject: "turn.submit.h-sub.b", body: requestJSON("h-sub", ""), eventSession: "_invalid", reason: wire.ReasonInvalidSubject},
	}
}

// TestHostileRequests: every hostile request gets its documented outcome
// (turn.rejected with a reason naming the field, terminated, dead-lettered)
// from a worker that survives it, and a valid turn submitted right after
// each completes.
func TestHostileRequests(t *testing.T) {
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{}))
	e.startWorker()
	for _, tt := range hostileRequests(t) {
		t.Run(tt.name, func(t *testing.T) {
			ctx := ctxFor(t)
			session := sessionOf(t, tt.body)
			subject := tt.subject
			if subject == "" {
				subject = "turn.submit." + session
			}
			eventSession := tt.eventSession
			if eventSession == "" {
				eventSession = session
			}
			m := &nats.Msg{Subject: subject, Data: tt.body, Header: nats.Header{}}
			if tt.contentType != "" {
				m.Header.Set(wire.HeaderContentType, tt.contentType)
			}
			if _, err := e.js.PublishMsg(ctx, m); err != nil {
				t.Fatal(err)
			}
			ev := waitRejected(t, e.js, eventSession)
			if ev.Payload["reason"] != tt.reason {
				t.Errorf("turn.rejected reason = %v (field %v); want %s", ev.Payload["reason"], ev.Payload["field"], tt.reason)
			}
			if tt.field != "" && ev.Payload["field"] != tt.field {
				t.Errorf("turn.rejected field = %v; want %s", ev.Payload["field"], tt.field)
			}
			// The dead-letter copy is written after the event.
			var got string
			eventually(t, "the request is dead-lettered", func() bool {
				got = deadLetters(ctx, t, e.js)[string(tt.body)]
				return got != ""
			})
			if got != tt.reason {
				t.Errorf("dead letter reason = %q; want %s", got, tt.reason)
			}
			assertValidTurnCompletes(t, e, session+"-after")
		})
	}
}

// sessionOf finds the session token in a hostile body (its first
// "h-..." token).
func sessionOf(t *testing.T, body []byte) string {
	t.Helper()
	i := bytes.Index(body, []byte("h-"))
	if i < 0 {
		t.Fatal("no h- session in the body")
	}
	j := i
	for j < len(body) && wire.ValidToken(string(body[i:j+1])) {
		j++
	}
	return string(body[i:j])
}

// assertValidTurnCompletes submits a plain turn and waits for its end.
func assertValidTurnCompletes(t *testing.T, e *env, session string) {
	t.Helper()
	turn, err := e.client().Submit(ctxFor(t), wire.TurnRequest{SessionID: session, Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := turn.Wait(ctxFor(t))
	if err != nil || res.Terminal.Type != wire.EventTurnCompleted {
		t.Fatalf("valid turn after the hostile one: %v %+v; want completed", err, res)
	}
}

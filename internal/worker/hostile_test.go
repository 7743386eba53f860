package worker_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/hostile"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/pkg/toolworker"
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

// hostileRequests are the request cases of the hostile-input suite; each
// uses a session of its own.
func hostileRequests(t *testing.T) []hostileRequest {
	nestedSchema := strings.Repeat(`{"type":"object","properties":{"a":`, 25) + `{"type":"string"}` + strings.Repeat("}}", 25)
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	tool := func(params string) string {
		return `,"tools":[{"name":"x","parameters":` + params + `}]`
	}
	var out []hostileRequest
	for _, b := range hostile.Requests(func(i int) string { return fmt.Sprintf("h-bomb%d", i) }) {
		out = append(out, hostileRequest{name: b.Name, contentType: b.ContentType, body: b.Body, reason: b.Reason, field: b.Field})
	}
	return append(out, []hostileRequest{
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
	}...)
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

// TestHostileProviders: every provider flood (an endless line, data lines
// that never end an event, huge text, reasoning, frame and arguments, ten
// thousand tool calls) fails its turn with RESPONSE_TOO_LARGE and the limit
// it crossed, after exactly one provider call, from a worker that survives
// it; a valid turn right after completes.
func TestHostileProviders(t *testing.T) {
	e := newEnv(t, hostile.Script(256<<20, mockllm.Default(mockllm.DefaultOptions{})))
	e.startWorker()
	limits := map[mockllm.FloodKind]string{
		mockllm.FloodLine: "sse_line_bytes", mockllm.FloodDataLines: "sse_event_bytes", mockllm.FloodText: "text_bytes",
		mockllm.FloodReasoning: "reasoning_bytes", mockllm.FloodFrame: "sse_line_bytes", mockllm.FloodArguments: "argument_bytes",
		mockllm.FloodToolCalls: "tool_calls",
	}
	for _, kind := range hostile.FloodKinds {
		t.Run(string(kind), func(t *testing.T) {
			session := "hp-" + strings.ReplaceAll(string(kind), "_", "-")
			prompt := hostile.FloodPrefix + string(kind)
			turn, err := e.client().Submit(ctxFor(t), wire.TurnRequest{SessionID: session, TurnID: "t1", Input: []wire.InputMessage{{Role: wire.RoleUser, Content: prompt}}})
			if err != nil {
				t.Fatal(err)
			}
			res, err := turn.Wait(ctxFor(t))
			if err != nil {
				t.Fatal(err)
			}
			ev := res.Terminal
			if ev.Type != wire.EventTurnFailed || ev.Payload["class"] != "RESPONSE_TOO_LARGE" || ev.Payload["limit"] != limits[kind] {
				t.Errorf("terminal = %s %v; want turn.failed class RESPONSE_TOO_LARGE limit %s", ev.Type, ev.Payload, limits[kind])
			}
			calls := 0
			for _, r := range e.mock.Requests() {
				if r.LastMessage().Text() == prompt {
					calls++
				}
			}
			if calls != 1 {
				t.Errorf("the provider was called %d times; want 1", calls)
			}
			assertValidTurnCompletes(t, e, session+"-after")
		})
	}
}

// TestHostileToolResults: through a real tool worker, an honest result too
// large for a record once escaped is stored truncated with its full size
// and the turn completes; a credential in a result is stored redacted and
// flagged; a credential the model puts in arguments that fail the schema
// is never quoted in the planning error.
func TestHostileToolResults(t *testing.T) {
	const secret = "sk_live_51H8abcdEFGHijklMNOPqrst0123456789"
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{}))
	e.startWorker()
	e.serveTools(map[string]toolworker.Handler{
		"big": func(context.Context, wire.ToolCall) (toolworker.Result, error) {
			return toolworker.Result{Content: strings.Repeat("<", 2<<20)}, nil
		},
		"leaky": func(context.Context, wire.ToolCall) (toolworker.Result, error) {
			return toolworker.Result{Content: "export STRIPE_KEY=" + secret + "\n"}, nil
		},
		"strict": func(context.Context, wire.ToolCall) (toolworker.Result, error) {
			t.Error("a call whose arguments fail the schema ran")
			return toolworker.Result{}, nil
		},
	})
	strict := wire.Tool{Name: "strict", Parameters: map[string]any{"type": "object", "properties": map[string]any{
		"key": map[string]any{"type": "string", "pattern": "^[0-9]+$", "default": secret},
	}}}
	tests := []struct {
		name  string
		tool  wire.Tool
		check func(t *testing.T, m wire.Message)
		// The mock model repeats a call it sees failing (its history goes
		// flat once arguments are redacted) until the repeated-failures
		// budget ends the turn.
		repeats bool
	}{
		{"2 MiB of <", wire.Tool{Name: "big", Parameters: map[string]any{"type": "object"}}, func(t *testing.T, m wire.Message) {
			if !m.ContentTruncated || m.ContentBytes != 2<<20 || !strings.Contains(m.Content, "[truncated: the tool returned") {
				t.Errorf("tool message truncated=%v bytes=%d; want truncated with a marker and the full size %d", m.ContentTruncated, m.ContentBytes, 2<<20)
			}
		}, false},
		{"credential in a result", wire.Tool{Name: "leaky", Parameters: map[string]any{"type": "object"}}, func(t *testing.T, m wire.Message) {
			if !m.ContentRedacted || strings.Contains(m.Content, secret) {
				t.Errorf("tool message redacted=%v content %q; want redacted and flagged", m.ContentRedacted, m.Content)
			}
		}, false},
		{"credential in arguments failing the schema", strict, func(t *testing.T, m wire.Message) {
			if !m.IsError || strings.Contains(m.Content, secret) || !strings.Contains(m.Content, "key") {
				t.Errorf("planning error %q; want an error naming the argument, never its value", m.Content)
			}
		}, true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			session := fmt.Sprintf("ht-%d", i)
			turn, err := e.client().Submit(ctxFor(t), wire.TurnRequest{SessionID: session, TurnID: "t1",
				Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "use the tool"}}, Tools: []wire.Tool{tt.tool}})
			if err != nil {
				t.Fatal(err)
			}
			res, err := turn.Wait(ctxFor(t))
			if err != nil {
				t.Fatal(err)
			}
			switch ev := res.Terminal; {
			case tt.repeats && (ev.Type != wire.EventTurnFailed || ev.Payload["budget"] != "max_repeated_tool_failures"):
				t.Fatalf("terminal %s %v; want failed by the repeated-failures budget", ev.Type, ev.Payload)
			case !tt.repeats && ev.Type != wire.EventTurnCompleted:
				t.Fatalf("terminal %s %v; want completed", ev.Type, ev.Payload)
			}
			msgs, raw := records[wire.Message](t, e.js, wire.StreamMessages, wire.Subjects{}.Message(session))
			var tools int
			for _, m := range msgs {
				if m.Role == wire.RoleTool {
					tools++
					tt.check(t, m)
				}
			}
			if tools == 0 || (!tt.repeats && tools != 1) {
				t.Errorf("%d tool messages; want 1 (or more, when the model repeats)", tools)
			}
			for _, m := range raw {
				if bytes.Contains(m.Data(), []byte(secret)) {
					t.Errorf("a session-log record holds the credential: %.200s", m.Data())
				}
			}
			for _, r := range e.mock.Requests() {
				if r.LastMessage().Role == "tool" && strings.Contains(r.LastMessage().Text(), secret) {
					t.Error("the provider was sent the credential in a tool message")
				}
			}
		})
	}
}

// TestDeadLetterAtMaxPayload: a rejected request that filled the server's
// max payload cannot be copied whole beside its reject reason; its
// dead-letter copy keeps its first bytes and its full size, instead of
// being lost.
func TestDeadLetterAtMaxPayload(t *testing.T) {
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{}))
	e.startWorker()
	ctx := ctxFor(t)
	const session = "h-max-payload"
	head, tail := `{"session_id":"`+session+`","turn_id":"t1","input":[{"role":"user","content":"`, `"}]}`
	body := head + strings.Repeat("x", int(e.nc.MaxPayload())-len(head)-len(tail)) + tail
	if _, err := e.js.PublishMsg(ctx, &nats.Msg{Subject: "turn.submit." + session, Data: []byte(body)}); err != nil {
		t.Fatal(err)
	}
	if ev := waitRejected(t, e.js, session); ev.Payload["reason"] != wire.ReasonTooLarge {
		t.Errorf("turn.rejected reason = %v; want too_large", ev.Payload["reason"])
	}
	s, err := e.js.Stream(ctx, wire.StreamDead)
	if err != nil {
		t.Fatal(err)
	}
	var m *jetstream.RawStreamMsg
	eventually(t, "the request is dead-lettered", func() bool {
		m, err = s.GetLastMsgForSubject(ctx, wire.Subjects{}.Dead(session))
		return err == nil
	})
	if got := m.Header.Get(wire.HeaderDeadTruncated); got != strconv.Itoa(len(body)) {
		t.Errorf("%s = %q; want the full size %d", wire.HeaderDeadTruncated, got, len(body))
	}
	if m.Header.Get(wire.HeaderRejectReason) != wire.ReasonTooLarge || len(m.Data) == 0 || !strings.HasPrefix(body, string(m.Data)) {
		t.Errorf("dead letter: reason %q, %d bytes; want too_large and the request's first bytes", m.Header.Get(wire.HeaderRejectReason), len(m.Data))
	}
}

// TestDeadLetterIgnoresJetStreamHeaders: a rejected request with headers
// JetStream acts on, which held for TURN_SUBMIT but would fail the copy to
// TURN_DEAD (an expected stream), is still copied, without them.
func TestDeadLetterIgnoresJetStreamHeaders(t *testing.T) {
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{}))
	e.startWorker()
	ctx := ctxFor(t)
	const session = "h-dead-headers"
	m := &nats.Msg{Subject: "turn.submit." + session, Data: []byte(`{"session_id":"other","turn_id":"t1","input":[]}`), Header: nats.Header{
		"Nats-Expected-Stream": {wire.StreamSubmit}, "X-Trace": {"kept"},
	}}
	if _, err := e.js.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
	waitRejected(t, e.js, session)
	s, err := e.js.Stream(ctx, wire.StreamDead)
	if err != nil {
		t.Fatal(err)
	}
	var d *jetstream.RawStreamMsg
	eventually(t, "the request is dead-lettered", func() bool {
		d, err = s.GetLastMsgForSubject(ctx, wire.Subjects{}.Dead(session))
		return err == nil
	})
	if d.Header.Get("X-Trace") != "kept" || d.Header.Get("Nats-Expected-Stream") != "" {
		t.Errorf("dead letter headers = %v; want X-Trace kept and no Nats- header of the request", d.Header)
	}
}

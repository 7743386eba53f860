package worker_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/tracing"
	"github.com/turnstream/turnstream/internal/worker"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// recorder is an in-memory exporter of one process's spans.
func recorder(t *testing.T) (*tracetest.SpanRecorder, trace.TracerProvider) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { tp.Shutdown(t.Context()) }) //nolint:errcheck // in memory
	return rec, tp
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// TestTraceOfATurn runs a tool turn whose client, worker and tool worker
// each trace into their own in-memory exporter (three processes in a
// deployment) and reads one trace back: the client's span is the turn's
// parent; the turn has two steps, each with one provider attempt carrying
// the GenAI attributes (system, model, tokens, finish); each call's span
// in the worker is the parent of the tool worker's span of it, the trace
// context having crossed in the call's headers; every span ended; and no
// attribute holds content (the prompt, the calls' arguments, the results,
// the answer).
func TestTraceOfATurn(t *testing.T) {
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{Split: 3}))
	workerSpans, workerTP := recorder(t)
	toolSpans, toolTP := recorder(t)
	clientSpans, clientTP := recorder(t)
	e.startWorkerWith(func(o *worker.Options) { o.TracerProvider = workerTP })
	e.serveTools(map[string]toolworker.Handler{"alpha": echoTool("alpha"), "beta": echoTool("beta")}, toolworker.WithTracerProvider(toolTP))

	const prompt = "please use both tools, quietly"
	ctx, app := clientTP.Tracer("app").Start(ctxFor(t), "app request")
	turn, err := e.client().Submit(ctx, wire.TurnRequest{
		SessionID: "tr", TurnID: "t1",
		Input: []wire.InputMessage{{Role: wire.RoleUser, Content: prompt}},
		Tools: []wire.Tool{tool("alpha"), tool("beta")},
	})
	if err != nil {
		t.Fatalf("Submit() = %v", err)
	}
	res, err := turn.Wait(ctx)
	if err != nil || res.Terminal.Type != wire.EventTurnCompleted {
		t.Fatalf("Wait() = %v, %v; want completed", res, err)
	}
	app.End()
	traceID := app.SpanContext().TraceID()

	// The worker ends the turn's span just after its terminal event, and a
	// tool worker its call's after the ack.
	eventually(t, "the turn's span and both tool workers' spans to end", func() bool {
		n := 0
		for _, s := range toolSpans.Ended() {
			if strings.HasPrefix(s.Name(), tracing.SpanExecuteTool) {
				n++
			}
		}
		for _, s := range workerSpans.Ended() {
			if s.Name() == tracing.SpanTurn {
				n++
			}
		}
		return n == 3
	})
	if got, want := len(workerSpans.Started()), len(workerSpans.Ended()); got != want {
		t.Errorf("the worker started %d spans and ended %d", got, want)
	}
	byName := map[string][]sdktrace.ReadOnlySpan{}
	var all []sdktrace.ReadOnlySpan
	for _, rec := range []*tracetest.SpanRecorder{workerSpans, toolSpans, clientSpans} {
		for _, s := range rec.Ended() {
			byName[s.Name()] = append(byName[s.Name()], s)
			all = append(all, s)
			if s.SpanContext().TraceID() != traceID {
				t.Errorf("span %q is in trace %s; want the client's %s", s.Name(), s.SpanContext().TraceID(), traceID)
			}
		}
	}
	one := func(name string) sdktrace.ReadOnlySpan {
		t.Helper()
		if len(byName[name]) != 1 {
			t.Fatalf("%d spans named %q; want 1 (spans: %v)", len(byName[name]), name, names(all))
		}
		return byName[name][0]
	}
	turnSpan := one(tracing.SpanTurn)
	if turnSpan.Parent().SpanID() != app.SpanContext().SpanID() {
		t.Errorf("the turn's parent is %s; want the client's span %s", turnSpan.Parent().SpanID(), app.SpanContext().SpanID())
	}
	if a := attrs(turnSpan); a[tracing.KeySession].AsString() != "tr" || a[tracing.KeyTurn].AsString() != "t1" ||
		a[tracing.KeyDelivery].AsInt64() != 1 || a[tracing.KeyOutcome].AsString() != "completed" {
		t.Errorf("turn span attributes = %v", turnSpan.Attributes())
	}

	steps := byName[tracing.SpanStep]
	if len(steps) != 2 {
		t.Fatalf("%d step spans; want 2 (spans: %v)", len(steps), names(all))
	}
	stepOf := map[trace.SpanID]int64{}
	for _, s := range steps {
		if s.Parent().SpanID() != turnSpan.SpanContext().SpanID() {
			t.Errorf("step span's parent is not the turn's")
		}
		stepOf[s.SpanContext().SpanID()] = attrs(s)[tracing.KeyStep].AsInt64()
	}
	chats := byName[tracing.SpanChat+" mock-1"]
	if len(chats) != 2 {
		t.Fatalf("%d attempt spans; want 2 (spans: %v)", len(chats), names(all))
	}
	finishes := map[int64]string{}
	for _, s := range chats {
		step, ok := stepOf[s.Parent().SpanID()]
		if !ok {
			t.Errorf("attempt span's parent is not a step span")
		}
		a := attrs(s)
		if s.SpanKind() != trace.SpanKindClient || a[tracing.KeyOperation].AsString() != tracing.OpChat ||
			a[tracing.KeyProviderName].AsString() != "openai" || a[tracing.KeySystem].AsString() != "openai" ||
			a[tracing.KeyRequestModel].AsString() != "mock-1" || a[tracing.KeyProvider].AsString() != "mock" ||
			a[tracing.KeyAttempt].AsInt64() != 1 || a[tracing.KeyInputTokens].AsInt64() <= 0 || a[tracing.KeyOutputTokens].AsInt64() <= 0 {
			t.Errorf("attempt span of step %d: attributes = %v", step, s.Attributes())
		}
		if fr := a[tracing.KeyFinishReasons].AsStringSlice(); len(fr) == 1 {
			finishes[step] = fr[0]
		}
	}
	if finishes[1] != "tool_calls" || finishes[2] != "stop" {
		t.Errorf("finish reasons by step = %v; want 1: tool_calls, 2: stop", finishes)
	}

	msgs, _ := records[wire.Message](t, e.js, wire.StreamMessages, "turn.message.tr")
	callIDs := map[string]string{}
	var contents []string
	for _, m := range msgs {
		contents = append(contents, m.Content)
		for _, c := range m.ToolCalls {
			callIDs[c.Name] = c.ID
			contents = append(contents, c.Arguments)
		}
	}
	for _, name := range []string{"alpha", "beta"} {
		call := one(tracing.SpanToolCall + " " + name)
		exec := one(tracing.SpanExecuteTool + " " + name)
		if call.Parent().SpanID() != turnSpan.SpanContext().SpanID() {
			t.Errorf("%s: the call's span is not the turn's child", name)
		}
		if exec.Parent().SpanID() != call.SpanContext().SpanID() || !exec.Parent().IsRemote() {
			t.Errorf("%s: the tool worker's span has parent %s (remote %v); want the worker's call span %s", name,
				exec.Parent().SpanID(), exec.Parent().IsRemote(), call.SpanContext().SpanID())
		}
		for _, s := range []sdktrace.ReadOnlySpan{call, exec} {
			a := attrs(s)
			if a[tracing.KeyToolName].AsString() != name || a[tracing.KeyToolCallID].AsString() != callIDs[name] ||
				a[tracing.KeyOutcome].AsString() != "ok" || a[tracing.KeyStep].AsInt64() != 1 {
				t.Errorf("%s span attributes = %v; want tool %s, call %s, outcome ok, step 1", s.Name(), s.Attributes(), name, callIDs[name])
			}
		}
	}

	// No content anywhere: every string attribute, of spans and their
	// events, against every text of the session log.
	for _, s := range all {
		kvs := append([]attribute.KeyValue(nil), s.Attributes()...)
		for _, ev := range s.Events() {
			kvs = append(kvs, ev.Attributes...)
		}
		for _, kv := range kvs {
			v := kv.Value.Emit()
			for _, c := range contents {
				if len(c) >= 8 && strings.Contains(v, c) || strings.Contains(v, prompt) {
					t.Errorf("span %q attribute %s = %q holds content", s.Name(), kv.Key, v)
				}
			}
		}
	}
	if len(contents) < 5 {
		t.Fatalf("the session log has %d texts; want the prompt, two calls, two results and the answer", len(contents))
	}
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

// TestTraceHeadersOnCalls submits a tool turn whose request carries a
// traceparent and an oversized tracestate, and reads the call the worker
// dispatched (no tool worker serves it, so it stays stored): a worker that
// traces carries its own span's traceparent on, and not the sender's
// tracestate; a worker that does not trace carries nothing of the
// sender's context.
func TestTraceHeadersOnCalls(t *testing.T) {
	const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for _, traced := range []bool{true, false} {
		t.Run(map[bool]string{true: "traced", false: "untraced"}[traced], func(t *testing.T) {
			e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{}))
			e.startWorkerWith(func(o *worker.Options) {
				if traced {
					_, o.TracerProvider = recorder(t)
				}
			})
			data, err := json.Marshal(wire.TurnRequest{
				SessionID: "th", TurnID: "t1",
				Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "call it"}},
				Tools: []wire.Tool{tool("alpha")},
			})
			if err != nil {
				t.Fatal(err)
			}
			m := nats.NewMsg("turn.submit.th")
			m.Data = data
			m.Header.Set(wire.HeaderContentType, wire.ContentTypeJSON)
			m.Header.Set(tracing.HeaderTraceparent, parent)
			// 32 valid members of 250-byte values: 8 KB that the W3C
			// parser accepts.
			members := make([]string, 32)
			for i := range members {
				members[i] = fmt.Sprintf("k%d=%s", i, strings.Repeat("x", 250))
			}
			m.Header.Set(tracing.HeaderTracestate, strings.Join(members, ","))
			if _, err := e.js.PublishMsg(ctxFor(t), m); err != nil {
				t.Fatal(err)
			}
			tools, err := e.js.Stream(ctxFor(t), wire.StreamTools)
			if err != nil {
				t.Fatal(err)
			}
			var call *jetstream.RawStreamMsg
			eventually(t, "the call to be dispatched", func() bool {
				call, err = tools.GetLastMsgForSubject(ctxFor(t), "turn.tool.alpha")
				return err == nil
			})
			h := call.Header
			if got := h.Get(tracing.HeaderTracestate); got != "" {
				t.Errorf("the call carries tracestate of %d bytes; want none", len(got))
			}
			got := h.Get(tracing.HeaderTraceparent)
			switch {
			case traced && (!strings.HasPrefix(got, "00-0af7651916cd43dd8448eb211c80319c-") || got == parent):
				t.Errorf("traceparent = %q; want the sender's trace with the worker's span", got)
			case !traced && got != "":
				t.Errorf("traceparent = %q; want none from a worker that does not trace", got)
			}
		})
	}
}

// TestTraceOfARetriedAttempt: a provider answering 503 once gets a failed
// attempt span (error status, error.type SERVER, attempt 1), the step's
// span a retry event, and the retry its own attempt span numbered 2, as
// the step's chunks number it.
func TestTraceOfARetriedAttempt(t *testing.T) {
	def := mockllm.Default(mockllm.DefaultOptions{})
	var calls atomic.Int32
	e := newEnv(t, mockllm.ScriptFunc(func(req *mockllm.Request) *mockllm.Response {
		if calls.Add(1) == 1 {
			return &mockllm.Response{Status: http.StatusServiceUnavailable, Body: `{"error":{"message":"overloaded"}}`}
		}
		return def.Respond(req)
	}))
	spans, tp := recorder(t)
	e.startWorkerWith(func(o *worker.Options) { o.TracerProvider = tp })
	ctx := ctxFor(t)
	turn, err := e.client().Submit(ctx, wire.TurnRequest{SessionID: "rt", TurnID: "t1", Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := turn.Wait(ctx); err != nil || res.Terminal.Type != wire.EventTurnCompleted {
		t.Fatalf("Wait() = %v, %v; want completed", res, err)
	}
	eventually(t, "the turn's span to end", func() bool {
		for _, s := range spans.Ended() {
			if s.Name() == tracing.SpanTurn {
				return true
			}
		}
		return false
	})
	var chats []sdktrace.ReadOnlySpan
	var step sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		switch s.Name() {
		case tracing.SpanChat + " mock-1":
			chats = append(chats, s)
		case tracing.SpanStep:
			step = s
		}
	}
	if len(chats) != 2 || step == nil {
		t.Fatalf("%d attempt spans, step %v; want 2 and one step", len(chats), step != nil)
	}
	first, second := attrs(chats[0]), attrs(chats[1])
	if first[tracing.KeyAttempt].AsInt64() != 1 || chats[0].Status().Code != codes.Error || first[tracing.KeyErrorType].AsString() != "SERVER" {
		t.Errorf("first attempt: status %v, attributes %v; want attempt 1, an error, error.type SERVER", chats[0].Status(), chats[0].Attributes())
	}
	if second[tracing.KeyAttempt].AsInt64() != 2 || chats[1].Status().Code == codes.Error {
		t.Errorf("second attempt: status %v, attributes %v; want attempt 2, no error", chats[1].Status(), chats[1].Attributes())
	}
	var retried bool
	for _, ev := range step.Events() {
		retried = retried || ev.Name == "retry"
	}
	if !retried {
		t.Errorf("the step's span has events %v; want a retry", step.Events())
	}
	chunks, _ := records[wire.Chunk](t, e.js, wire.StreamChunks, "turn.chunk.rt.t1")
	var markers []string
	for _, c := range chunks {
		if c.Marker != "" {
			markers = append(markers, fmt.Sprintf("%d:%s", c.Attempt, c.Marker))
		}
	}
	if strings.Join(markers, " ") != "1:failed 2:completed" && strings.Join(markers, " ") != "1:retrying 2:completed" {
		t.Errorf("the chunks' attempt markers are %v; the spans' attempts must be theirs", markers)
	}
}

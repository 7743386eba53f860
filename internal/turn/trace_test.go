package turn_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/tracing"
	"github.com/turnstream/turnstream/internal/turn"
	"github.com/turnstream/turnstream/pkg/wire"
)

type panicking struct{}

func (panicking) Execute(context.Context, []provider.Target, *provider.Request, provider.Observer) (*provider.Result, error) {
	panic("adapter bug")
}

// TestSpansOfAPanicAndAnAbort: a run that panics ends its turn span with
// an error and outcome panic (the panic goes on to the lifecycle), and the
// abort that follows has a turn.abort span of its own naming the reason.
func TestSpansOfAPanicAndAnAbort(t *testing.T) {
	e := newEnv(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	loop := &turn.Loop{Exec: panicking{}, Tracer: tracing.Tracer(tp)}
	req := &wire.TurnRequest{SessionID: "sp", TurnID: "t1", Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "hi"}}}

	func() {
		defer func() {
			if recover() == nil {
				t.Error("Run() did not panic; the executor did")
			}
		}()
		e.run(loop, wire.JSON, req)
	}()
	log, err := e.bus.LoadLog(ctxFor(t), req.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if out := loop.Abort(ctxFor(t), turn.Input{
		Request: req, Log: log.Messages, Stored: log.Stored, Delivery: 1,
		Writer: e.bus.Turn(req.SessionID, req.TurnID, wire.JSON, log),
	}, "internal_error"); out.Err != nil || out.Status != wire.EventTurnFailed {
		t.Fatalf("Abort() = %+v; want turn.failed", out)
	}

	got := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		got[s.Name()] = s
	}
	if s := got[tracing.SpanTurn]; s == nil || s.Status().Code != codes.Error || !hasAttr(s, tracing.KeyOutcome.String("panic")) {
		t.Errorf("the panicked run's span = %v; want ended with an error, outcome panic", s)
	}
	if s := got[tracing.SpanAbort]; s == nil || s.Status().Code != codes.Error ||
		!hasAttr(s, tracing.KeyReason.String("internal_error")) || !hasAttr(s, tracing.KeyOutcome.String("failed")) {
		t.Errorf("the abort's span = %v; want turn.abort, failed, reason internal_error", s)
	}
	if len(rec.Started()) != len(rec.Ended()) {
		t.Errorf("%d spans started, %d ended", len(rec.Started()), len(rec.Ended()))
	}
}

func hasAttr(s sdktrace.ReadOnlySpan, kv attribute.KeyValue) bool {
	for _, a := range s.Attributes() {
		if a == kv {
			return true
		}
	}
	return false
}

package toolworker_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

const tool = "lookup"

func ok(content string) toolworker.Handler {
	return func(context.Context, wire.ToolCall) (toolworker.Result, error) {
		return toolworker.Result{Content: content}, nil
	}
}

func TestServeAnswersCall(t *testing.T) {
	for _, codec := range []wire.Codec{wire.JSON, wire.Msgpack} {
		t.Run(codec.ContentType(), func(t *testing.T) {
			e := newEnv(t, &bus.Topology{})
			e.serve(t, map[string]toolworker.Handler{
				tool: func(ctx context.Context, call wire.ToolCall) (toolworker.Result, error) {
					if dl, ok := ctx.Deadline(); !ok || !dl.Equal(call.Deadline) {
						return toolworker.Result{}, fmt.Errorf("ctx deadline %v, %v; want %v", dl, ok, call.Deadline)
					}
					return toolworker.Result{Content: "sunny in " + call.Arguments}, nil
				},
			})
			results := e.follow(t, "s1")

			e.publishCall(t, codec, newCall("s1", tool, "call_1"))

			m, got := results.next(t)
			want := wire.ToolResult{SessionID: "s1", TurnID: "t1", CallID: "call_1", Token: tokenOf("s1", tool, "call_1"), Content: `sunny in {"city":"Paris"}`}
			if got != want {
				t.Errorf("result = %+v; want %+v", got, want)
			}
			if ct := m.Headers().Get(wire.HeaderContentType); ct != codec.ContentType() {
				t.Errorf("result Content-Type = %q; want %q", ct, codec.ContentType())
			}
			var strict wire.ToolResult
			if err := codec.Unmarshal(m.Data(), &strict); err != nil {
				t.Errorf("%s.Unmarshal(result) = %v; want the call's encoding", codec.ContentType(), err)
			}
			if id, want := m.Headers().Get(jetstream.MsgIDHeader), resultID(want.Token); id != want {
				t.Errorf("result %s = %q; want %q", jetstream.MsgIDHeader, id, want)
			}
		})
	}
}

func TestServeHandlerErrorBecomesErrorResult(t *testing.T) {
	e := newEnv(t, &bus.Topology{})
	e.serve(t, map[string]toolworker.Handler{
		tool: func(context.Context, wire.ToolCall) (toolworker.Result, error) {
			return toolworker.Result{Content: "ignored"}, errors.New("no such city")
		},
	})
	results := e.follow(t, "s1")
	e.publishCall(t, wire.JSON, newCall("s1", tool, "c1"))

	_, got := results.next(t)
	if got.Content != "no such city" || !got.IsError {
		t.Errorf("result = %q, is_error %v; want %q, is_error true", got.Content, got.IsError, "no such city")
	}
}

func TestServeRecoversPanic(t *testing.T) {
	e := newEnv(t, &bus.Topology{})
	e.serve(t, map[string]toolworker.Handler{
		tool: func(_ context.Context, call wire.ToolCall) (toolworker.Result, error) {
			if call.CallID == "boom" {
				panic("secret arguments")
			}
			return toolworker.Result{Content: "fine"}, nil
		},
	}, toolworker.WithConcurrency(1))
	results := e.follow(t, "s1")
	e.publishCall(t, wire.JSON, newCall("s1", tool, "boom"))
	e.publishCall(t, wire.JSON, newCall("s1", tool, "after"))

	for _, want := range []wire.ToolResult{
		{SessionID: "s1", TurnID: "t1", CallID: "boom", Token: tokenOf("s1", tool, "boom"), Content: "tool panicked", IsError: true},
		{SessionID: "s1", TurnID: "t1", CallID: "after", Token: tokenOf("s1", tool, "after"), Content: "fine"},
	} {
		if _, got := results.next(t); got != want {
			t.Errorf("result = %+v; want %+v", got, want)
		}
	}
}

func TestServeTerminatesInvalidCalls(t *testing.T) {
	valid := func() wire.ToolCall { return newCall("bad", tool, "c1") }
	encode := func(c wire.ToolCall) []byte {
		b, err := wire.JSON.Marshal(&c)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	with := func(f func(*wire.ToolCall)) []byte {
		c := valid()
		f(&c)
		return encode(c)
	}
	tests := []struct {
		name        string
		contentType string
		data        []byte
	}{
		{"bad JSON", wire.ContentTypeJSON, []byte(`{"session_id":`)},
		{"unknown field", wire.ContentTypeJSON, []byte(`{"session_id":"bad","nope":1}`)},
		{"bad msgpack", wire.ContentTypeMsgpack, []byte{0xc1}},
		{"unsupported content type", "text/plain", encode(valid())},
		{"wrong tool name", wire.ContentTypeJSON, with(func(c *wire.ToolCall) { c.Name = "other" })},
		{"invalid turn id", wire.ContentTypeJSON, with(func(c *wire.ToolCall) { c.TurnID = "a.b" })},
		{"missing call id", wire.ContentTypeJSON, with(func(c *wire.ToolCall) { c.CallID = "" })},
		{"call id no result can carry", wire.ContentTypeJSON, with(func(c *wire.ToolCall) { c.CallID = strings.Repeat("x", 129) })},
		{"arguments not JSON", wire.ContentTypeJSON, with(func(c *wire.ToolCall) { c.Arguments = "{" })},
		{"deadline passed", wire.ContentTypeJSON, with(func(c *wire.ToolCall) { c.Deadline = time.Now().Add(-time.Second) })},
		{"no deadline", wire.ContentTypeJSON, with(func(c *wire.ToolCall) { c.Deadline = time.Time{} })},
		{"no token", wire.ContentTypeJSON, with(func(c *wire.ToolCall) { c.Token = "" })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, &bus.Topology{})
			var calls sync.Map
			e.serve(t, map[string]toolworker.Handler{
				tool: func(_ context.Context, call wire.ToolCall) (toolworker.Result, error) {
					calls.Store(call.SessionID, true)
					return toolworker.Result{Content: "fine"}, nil
				},
			}, toolworker.WithConcurrency(1))
			good := e.follow(t, "good")

			e.publishRaw(t, tool, tt.contentType, tt.data)
			e.publishCall(t, wire.JSON, newCall("good", tool, "c2"))

			// One call at a time: once the valid call is answered, the
			// invalid one has been settled.
			if _, got := good.next(t); got.Content != "fine" {
				t.Errorf("next valid call's result = %+v; want content fine", got)
			}
			if _, ran := calls.Load("bad"); ran {
				t.Error("the handler ran the invalid call")
			}
			if n := e.storedResults(t, "bad"); n != 0 {
				t.Errorf("stored results of the invalid call = %d; want 0", n)
			}
			cons := e.toolConsumer(t)
			if cons.NumRedelivered != 0 {
				t.Errorf("tool consumer redelivered %d calls; want 0 (terminated, not nakked)", cons.NumRedelivered)
			}
		})
	}
}

// toolConsumer waits until the tool consumer has settled every call, and
// returns its info.
func (e *env) toolConsumer(t *testing.T) *jetstream.ConsumerInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	for {
		cons, err := e.js.Consumer(ctx, wire.StreamTools, bus.ToolConsumer(tool))
		if err != nil {
			t.Fatalf("Consumer(%s) = %v", bus.ToolConsumer(tool), err)
		}
		info := cons.CachedInfo()
		if info.NumAckPending == 0 && info.NumPending == 0 {
			return info
		}
		select {
		case <-ctx.Done():
			t.Fatalf("tool consumer still has %d calls pending and %d unacked", info.NumPending, info.NumAckPending)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestServeDrainTimeoutCutsCallShort stops a tool worker in the middle of
// a call: its drain timeout cancels the handler, so the call's outcome is
// unknown. An idempotent tool's call goes back to the queue and the next
// tool worker runs it; any other is answered "tool outcome unknown" and
// never runs again. Either way the session holds exactly one result for it.
func TestServeDrainTimeoutCutsCallShort(t *testing.T) {
	for _, idempotent := range []bool{true, false} {
		t.Run(fmt.Sprintf("idempotent=%v", idempotent), func(t *testing.T) {
			e := newEnv(t, &bus.Topology{})
			results := e.follow(t, "s1")
			var opts []toolworker.Option
			if idempotent {
				opts = append(opts, toolworker.WithIdempotent(tool))
			}
			started := make(chan struct{})
			var once sync.Once
			first := e.serve(t, map[string]toolworker.Handler{
				tool: func(ctx context.Context, _ wire.ToolCall) (toolworker.Result, error) {
					once.Do(func() { close(started) })
					<-ctx.Done() // cut short by the drain timeout
					return toolworker.Result{Content: "partial"}, nil
				},
			}, append(opts, toolworker.WithDrainTimeout(50*time.Millisecond))...)

			e.publishCall(t, wire.JSON, newCall("s1", tool, "c1"))
			await(t, started, "the first handler to start")
			if err := first.stop(); err != nil {
				t.Fatalf("first Serve() = %v; want nil", err)
			}

			var ran atomic.Int32
			e.serve(t, map[string]toolworker.Handler{
				tool: func(context.Context, wire.ToolCall) (toolworker.Result, error) {
					ran.Add(1)
					return toolworker.Result{Content: "complete"}, nil
				},
			}, opts...)
			m, got := results.next(t)
			want := wire.ToolResult{SessionID: "s1", TurnID: "t1", CallID: "c1", Token: tokenOf("s1", tool, "c1"), Content: "complete"}
			wantRuns := int32(1)
			if !idempotent {
				want.Content, want.IsError, want.Synthesized = toolworker.OutcomeUnknownContent, true, true
				wantRuns = 0
			}
			if got != want {
				t.Errorf("result = %+v; want %+v", got, want)
			}
			meta, err := m.Metadata()
			if err != nil {
				t.Fatal(err)
			}
			e.toolConsumer(t)
			if n := e.storedResults(t, "s1"); n != 1 {
				t.Errorf("stored results = %d (last seq %d); want 1", n, meta.Sequence.Stream)
			}
			if n := ran.Load(); n != wantRuns {
				t.Errorf("second handler runs = %d; want %d", n, wantRuns)
			}
		})
	}
}

// TestServeDeduplicatesResult replays the crash window between publishing
// a result and acking its call: the redelivered call's result is discarded
// by the stream, so the session keeps exactly one result per call id.
func TestServeDeduplicatesResult(t *testing.T) {
	e := newEnv(t, &bus.Topology{})
	results := e.follow(t, "s1")

	// The crashed worker's result, stored before its ack was lost.
	stored := wire.ToolResult{SessionID: "s1", TurnID: "t1", CallID: "c1", Token: tokenOf("s1", tool, "c1"), Content: "from the crashed worker"}
	data, err := wire.JSON.Marshal(&stored)
	if err != nil {
		t.Fatal(err)
	}
	m := &nats.Msg{Subject: e.subjects.Result("s1"), Data: data, Header: nats.Header{}}
	m.Header.Set(wire.HeaderContentType, wire.ContentTypeJSON)
	if _, err := e.js.PublishMsg(t.Context(), m, jetstream.WithMsgID(resultID(stored.Token))); err != nil {
		t.Fatal(err)
	}

	var ran atomic.Int32
	e.serve(t, map[string]toolworker.Handler{
		tool: func(context.Context, wire.ToolCall) (toolworker.Result, error) {
			ran.Add(1)
			return toolworker.Result{Content: "from the new worker"}, nil
		},
	}, toolworker.WithConcurrency(1))
	e.publishCall(t, wire.JSON, newCall("s1", tool, "c1")) // the redelivery
	e.publishCall(t, wire.JSON, newCall("s1", tool, "c2"))

	for _, want := range []wire.ToolResult{
		stored,
		{SessionID: "s1", TurnID: "t1", CallID: "c2", Token: tokenOf("s1", tool, "c2"), Content: "from the new worker"},
	} {
		if _, got := results.next(t); got != want {
			t.Errorf("result = %+v; want %+v", got, want)
		}
	}
	if n := ran.Load(); n != 2 {
		t.Errorf("handler runs = %d; want 2", n)
	}
	e.toolConsumer(t)
	if n := e.storedResults(t, "s1"); n != 2 {
		t.Errorf("stored results = %d; want 2 (one per call id)", n)
	}
}

func TestServeDrainsInFlightCall(t *testing.T) {
	e := newEnv(t, &bus.Topology{})
	results := e.follow(t, "s1")
	started, release := make(chan struct{}), make(chan struct{})
	s := e.serve(t, map[string]toolworker.Handler{
		tool: func(ctx context.Context, _ wire.ToolCall) (toolworker.Result, error) {
			close(started)
			select {
			case <-release:
				return toolworker.Result{Content: "finished during drain"}, nil
			case <-ctx.Done():
				return toolworker.Result{}, ctx.Err()
			}
		},
	}, toolworker.WithDrainTimeout(time.Hour))

	e.publishCall(t, wire.JSON, newCall("s1", tool, "c1"))
	await(t, started, "the handler to start")
	s.cancel()
	if s.returned() {
		t.Fatalf("Serve() = %v before its in-flight handler returned", s.err)
	}
	close(release)
	if err := s.stop(); err != nil {
		t.Fatalf("Serve() = %v; want nil", err)
	}
	if _, got := results.next(t); got.Content != "finished during drain" || got.IsError {
		t.Errorf("result = %+v; want the drained handler's", got)
	}
	e.toolConsumer(t)
}

// TestServeWaitsForTopology: Serve creates nothing. Started before the
// workers, it waits for the claims bucket they create when they start,
// then for the tool's consumer they create at its first call, and serves
// the call once the consumer exists. It waits the same way for a consumer
// removed while it served (an operator, or the consumers' inactive
// threshold).
func TestServeWaitsForTopology(t *testing.T) {
	e := newEnv(t, nil)
	bucket := newSignal("waiting for the claims bucket")
	consumer := newSignal("waiting for the tool consumer; the turnstream workers create it at the tool's first call")
	bound := newSignal("tool consumer bound")
	e.serve(t, map[string]toolworker.Handler{tool: ok("fine")},
		toolworker.WithLogger(testLogger(t, bucket, consumer, bound)))
	await(t, bucket.C, "Serve to wait for the claims bucket")

	topo := bus.Topology{}
	e.topo = topo
	e.ensure(t, topo) // a turnstream worker starts
	await(t, consumer.C, "Serve to wait for the tool consumer")
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	if _, err := e.js.Consumer(ctx, wire.StreamTools, bus.ToolConsumer(tool)); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Fatalf("Consumer(%s) = %v before the first call; want ErrConsumerNotFound (Serve creates none)", bus.ToolConsumer(tool), err)
	}

	results := e.follow(t, "s1")
	e.publishCall(t, wire.JSON, newCall("s1", tool, "c1")) // the worker creates the consumer, then dispatches
	await(t, bound.C, "Serve to bind the consumer")
	if _, got := results.next(t); got.Content != "fine" {
		t.Errorf("result = %+v; want content fine", got)
	}

	// The consumer is removed under Serve, and made again at the next call.
	if err := e.js.DeleteConsumer(ctx, wire.StreamTools, bus.ToolConsumer(tool)); err != nil {
		t.Fatal(err)
	}
	e.publishCall(t, wire.JSON, newCall("s1", tool, "c2"))
	if _, got := results.next(t); got.Content != "fine" || got.CallID != "c2" {
		t.Errorf("result = %+v; want c2 answered fine", got)
	}
	info, err := e.js.Consumer(ctx, wire.StreamTools, bus.ToolConsumer(tool))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := info.CachedInfo().Config, topo.ToolConsumerConfig(tool); got.FilterSubject != want.FilterSubject || got.AckWait != want.AckWait {
		t.Errorf("tool consumer filter %q, ack wait %s; want the workers' %q, %s", got.FilterSubject, got.AckWait, want.FilterSubject, want.AckWait)
	}
}

func TestServeWithPrefix(t *testing.T) {
	topo := bus.Topology{Subjects: wire.Subjects{Prefix: "acme"}}
	e := newEnv(t, &topo)
	e.serve(t, map[string]toolworker.Handler{tool: ok("fine")}, toolworker.WithPrefix("acme"))
	results := e.follow(t, "s1")
	e.publishCall(t, wire.Msgpack, newCall("s1", tool, "c1"))
	m, got := results.next(t)
	if got.Content != "fine" || m.Subject() != "acme.result.s1" {
		t.Errorf("result on %s = %+v; want content fine on acme.result.s1", m.Subject(), got)
	}
}

func TestServeServesSeveralTools(t *testing.T) {
	e := newEnv(t, &bus.Topology{})
	e.serve(t, map[string]toolworker.Handler{"a": ok("from a"), "b": ok("from b")})
	results := e.follow(t, "s1")
	e.publishCall(t, wire.JSON, newCall("s1", "a", "c1"))
	if _, got := results.next(t); got.Content != "from a" {
		t.Errorf("result = %+v; want from a", got)
	}
	e.publishCall(t, wire.JSON, newCall("s1", "b", "c2"))
	if _, got := results.next(t); got.Content != "from b" {
		t.Errorf("result = %+v; want from b", got)
	}
}

func TestServeBoundsConcurrency(t *testing.T) {
	const limit, calls = 2, 6
	e := newEnv(t, &bus.Topology{})
	var active, peak atomic.Int32
	var startedTwo sync.WaitGroup
	startedTwo.Add(limit)
	release := make(chan struct{})
	e.serve(t, map[string]toolworker.Handler{
		tool: func(ctx context.Context, _ wire.ToolCall) (toolworker.Result, error) {
			n := active.Add(1)
			defer active.Add(-1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			if n <= limit {
				startedTwo.Done()
			}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return toolworker.Result{Content: "fine"}, nil
		},
	}, toolworker.WithConcurrency(limit))
	results := e.follow(t, "s1")
	for i := range calls {
		e.publishCall(t, wire.JSON, newCall("s1", tool, fmt.Sprintf("c%d", i)))
	}
	twoRunning := make(chan struct{})
	go func() { startedTwo.Wait(); close(twoRunning) }()
	await(t, twoRunning, "two handlers to run")
	close(release)
	for range calls {
		results.next(t)
	}
	if p := peak.Load(); p > limit {
		t.Errorf("peak concurrent handlers = %d; want at most %d", p, limit)
	}
}

func TestServeTruncatesOversizedResult(t *testing.T) {
	const full = 2 << 20
	tests := []struct {
		name    string
		codec   wire.Codec
		content string
	}{
		{"json ascii", wire.JSON, strings.Repeat("x", full)},
		{"json escaped", wire.JSON, strings.Repeat("<", full)},
		{"json multibyte", wire.JSON, strings.Repeat("é", full/2)},
		{"msgpack", wire.Msgpack, strings.Repeat("<", full)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, &bus.Topology{})
			e.serve(t, map[string]toolworker.Handler{tool: ok(tt.content)})
			results := e.follow(t, "s1")
			e.publishCall(t, tt.codec, newCall("s1", tool, "c1"))

			m, got := results.next(t)
			if got.IsError || !got.ContentTruncated || got.ContentBytes != full {
				t.Fatalf("result is_error %v, content_truncated %v, content_bytes %d; want false, true, %d", got.IsError, got.ContentTruncated, got.ContentBytes, full)
			}
			if n := int64(len(m.Data())); n > e.nc.MaxPayload() {
				t.Errorf("stored result is %d bytes; want at most the max payload %d", n, e.nc.MaxPayload())
			}
			body, marker, found := strings.Cut(got.Content, "\n[truncated: ")
			if !found || !strings.HasPrefix(tt.content, body) || !utf8.ValidString(body) {
				t.Fatalf("content = %.40q…%q; want a UTF-8 prefix of the result and a marker", got.Content, got.Content[max(0, len(got.Content)-80):])
			}
			if want := fmt.Sprintf("the tool returned %d bytes; the first %d are shown]", full, len(body)); marker != want {
				t.Errorf("marker = %q; want %q", marker, want)
			}
			if len(body) < 100_000 {
				t.Errorf("%d bytes shown; want as many as fit (hundreds of KB)", len(body))
			}
			// The claim records the result as it was published.
			rec := e.claim(t, "s1", "t1", "c1")
			if res, _ := rec["result"].(map[string]any); res["content"] != got.Content || res["content_truncated"] != true || res["content_bytes"] != float64(full) {
				t.Errorf("claim result content_truncated %v, content_bytes %v, same content %v; want the published result", res["content_truncated"], res["content_bytes"], res["content"] == got.Content)
			}
		})
	}
}

func TestServeReturnsWhenConnectionCloses(t *testing.T) {
	e := newEnv(t, &bus.Topology{})
	e.ensureTool(t, tool)
	bound := newSignal("serving tool")
	s := e.serve(t, map[string]toolworker.Handler{tool: ok("fine")}, toolworker.WithLogger(testLogger(t, bound)))
	await(t, bound.C, "the tool consumer to be bound")
	e.nc.Close()
	if err := s.wait(); !errors.Is(err, nats.ErrConnectionClosed) {
		t.Errorf("Serve() = %v; want %v", err, nats.ErrConnectionClosed)
	}
}

func TestServeRejectsBadArguments(t *testing.T) {
	h := map[string]toolworker.Handler{tool: ok("fine")}
	tests := []struct {
		name     string
		handlers map[string]toolworker.Handler
		opts     []toolworker.Option
		want     error
	}{
		{"nil handlers", nil, nil, toolworker.ErrInvalidHandlers},
		{"no handlers", map[string]toolworker.Handler{}, nil, toolworker.ErrInvalidHandlers},
		{"nil handler", map[string]toolworker.Handler{tool: nil}, nil, toolworker.ErrInvalidHandlers},
		{"name with a dot", map[string]toolworker.Handler{"a.b": ok("")}, nil, toolworker.ErrInvalidHandlers},
		{"name with a wildcard", map[string]toolworker.Handler{"*": ok("")}, nil, toolworker.ErrInvalidHandlers},
		{"name too long", map[string]toolworker.Handler{strings.Repeat("a", 65): ok("")}, nil, toolworker.ErrInvalidHandlers},
		{"zero concurrency", h, []toolworker.Option{toolworker.WithConcurrency(0)}, toolworker.ErrInvalidOption},
		{"zero drain timeout", h, []toolworker.Option{toolworker.WithDrainTimeout(0)}, toolworker.ErrInvalidOption},
		{"empty prefix", h, []toolworker.Option{toolworker.WithPrefix("")}, toolworker.ErrInvalidOption},
		{"empty prefix token", h, []toolworker.Option{toolworker.WithPrefix("a..b")}, toolworker.ErrInvalidOption},
		{"wildcard prefix", h, []toolworker.Option{toolworker.WithPrefix("turn.>")}, toolworker.ErrInvalidOption},
		{"nil option", h, []toolworker.Option{nil}, toolworker.ErrInvalidOption},
		{"no idempotent tools", h, []toolworker.Option{toolworker.WithIdempotent()}, toolworker.ErrInvalidOption},
		{"idempotent name with a dot", h, []toolworker.Option{toolworker.WithIdempotent("a.b")}, toolworker.ErrInvalidOption},
		{"idempotent empty name", h, []toolworker.Option{toolworker.WithIdempotent("")}, toolworker.ErrInvalidOption},
		{"idempotent tool without a handler", h, []toolworker.Option{toolworker.WithIdempotent(tool, "other")}, toolworker.ErrInvalidOption},
		{"idempotent tool without a handler, second option", h, []toolworker.Option{toolworker.WithIdempotent(tool), toolworker.WithIdempotent("other")}, toolworker.ErrInvalidOption},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := toolworker.Serve(t.Context(), nil, tt.handlers, tt.opts...)
			if !errors.Is(err, tt.want) {
				t.Errorf("Serve() = %v; want %v", err, tt.want)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "toolworker: ") {
				t.Errorf("Serve() = %q; want the toolworker: prefix", err)
			}
		})
	}
	if err := toolworker.Serve(t.Context(), nil, h); err == nil {
		t.Error("Serve(nil JetStream) = nil; want an error")
	}
	// Valid options pass validation and reach the JetStream check.
	valid := []toolworker.Option{
		toolworker.WithIdempotent(tool), toolworker.WithIdempotent(tool, tool), toolworker.WithConcurrency(1),
	}
	if err := toolworker.Serve(t.Context(), nil, h, valid...); err == nil || errors.Is(err, toolworker.ErrInvalidOption) {
		t.Errorf("Serve(nil JetStream, valid options) = %v; want the nil JetStream error", err)
	}
}

// resultID is the message id a result of the call with token is
// published under: "result:" and the token's SHA-256 in unpadded base64url.
func resultID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "result:" + base64.RawURLEncoding.EncodeToString(sum[:])
}

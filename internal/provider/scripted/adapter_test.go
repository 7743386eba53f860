package scripted_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/scripted"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestReplayMatchesWire streams what a real provider would send through
// the openaichat adapter over HTTP, records it as the turn loop does (raw
// frames and chunks), derives a script from the record and replays it: the replay relays the same frames
// with the same normalized deltas and ends the same way.
func TestReplayMatchesWire(t *testing.T) {
	text := mockllm.NewStream("m-a").Text("Sunny in Lyon, snow in Oslo.").Finish("stop").Usage(12, 8).Frames()
	tools := mockllm.NewStream("m-a").Reasoning("reasoning_content", "two cities, two calls").
		ToolCalls(3, mockllm.Call{ID: "call_1", Name: "weather", Arguments: `{"city":"Lyon"}`},
			mockllm.Call{ID: "call_2", Name: "weather", Arguments: `{"city":"Oslo ☃"}`}).
		Finish("tool_calls").Usage(20, 11).Frames()
	tests := []struct {
		name  string
		resp  *mockllm.Response
		class provider.Class // empty: completes
	}{
		{name: "text", resp: &mockllm.Response{Frames: text, Done: true}},
		{name: "reasoning and parallel tool calls", resp: &mockllm.Response{Frames: tools, Done: true}},
		{name: "length", resp: mockllm.NewStream("m-a").Text("cut").Finish("length").Response()},
		{name: "think tags", resp: mockllm.NewStream("m-a").Text("<think>hmm</think>ok").Finish("stop").Response()},
		{name: "event frames", resp: &mockllm.Response{Frames: []mockllm.Frame{{Event: "message", Data: text[1].Data}, text[len(text)-2]}, Done: true}},
		{name: "in-band error", resp: &mockllm.Response{Frames: []mockllm.Frame{text[0], text[1], {Data: `{"error":{"message":"overloaded","type":"server_error"}}`}}, Done: true}, class: provider.ClassServer},
		{name: "error event", resp: &mockllm.Response{Frames: []mockllm.Frame{text[1], {Event: "error", Data: `{"detail":"busy"}`}}, Done: true}, class: provider.ClassServer},
		{name: "malformed frame", resp: &mockllm.Response{Frames: []mockllm.Frame{text[1], {Data: `{"choices":[`}}, Done: true}, class: provider.ClassMalformed},
		{name: "mid-stream disconnect", resp: &mockllm.Response{Frames: text, Done: true, DisconnectAfter: 3}, class: provider.ClassTransport},
		{name: "no [DONE]", resp: &mockllm.Response{Frames: text}, class: provider.ClassStreamClosed},
		{name: "empty stop", resp: mockllm.NewStream("m-a").Finish("stop").Response(), class: provider.ClassEmpty},
		{name: "HTTP 503", resp: mockllm.Error(http.StatusServiceUnavailable, "server_error", "busy", nil), class: provider.ClassServer},
		{name: "HTTP 429", resp: mockllm.Error(http.StatusTooManyRequests, "rate_limit_exceeded", "slow down", http.Header{"Retry-After": {"1"}}), class: provider.ClassRateLimit},
		{name: "HTTP 401", resp: mockllm.Error(http.StatusUnauthorized, "invalid_api_key", "no", nil), class: provider.ClassAuth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wireAdapter := mockAdapter(t, tt.resp)
			body, err := wireAdapter.Prepare(testRequest(), provider.Model{Name: targetA.Model})
			if err != nil {
				t.Fatalf("openaichat Prepare() error = %v", err)
			}
			orig := stream(t, wireAdapter, body)
			if orig.class() != tt.class {
				t.Fatalf("openaichat Stream() error = %v; want class %q (the fixture is wrong)", orig.err, tt.class)
			}

			a := newScripted(t, derive(t, record(1, 1, targetA, orig)))
			got := stream(t, a, prepare(t, a, targetA.Model))

			if got.class() != orig.class() {
				t.Errorf("Stream() error = %v; want class %q", got.err, orig.class())
			}
			if !reflect.DeepEqual(got.resp, orig.resp) {
				t.Errorf("Stream() response = %+v; want %+v", got.resp, orig.resp)
			}
			if !reflect.DeepEqual(got.frames, orig.frames) {
				t.Errorf("Stream() relayed %d frames:\n%s\nwant %d:\n%s", len(got.frames), render(got.frames), len(orig.frames), render(orig.frames))
			}
			if a.Remaining() != 0 {
				t.Errorf("Remaining() = %d; want 0", a.Remaining())
			}
		})
	}
}

// record writes one attempt's outcome as the turn loop would: a raw frame
// and a chunk per frame, then the end marker.
func record(step, n int, target provider.Target, o outcome) recording {
	var out recording
	for i, f := range o.frames {
		out.frames = append(out.frames, wire.RawFrame{
			SessionID: session, TurnID: turnID, Step: step, Attempt: n, Seq: i + 1,
			Provider: target.Provider, Model: target.Model, Event: f.Event, Bytes: f.Raw,
		})
		out.chunks = append(out.chunks, wire.Chunk{
			SessionID: session, TurnID: turnID, Step: step, Attempt: n, Seq: i + 1,
			Provider: target.Provider, Model: target.Model, Event: f.Event, Delta: f.Delta,
		})
	}
	m := wire.Chunk{
		SessionID: session, TurnID: turnID, Step: step, Attempt: n, Seq: len(o.frames) + 1,
		Provider: target.Provider, Model: target.Model, Marker: wire.MarkerCompleted,
	}
	if c := o.class(); c != "" {
		m.Marker, m.Failure = wire.MarkerFailed, string(c)
	}
	out.chunks = append(out.chunks, m)
	return out
}

func render(fs []provider.Frame) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString("  ")
		if f.Event != "" {
			b.WriteString("event:" + f.Event + " ")
		}
		b.Write(f.Raw)
		if f.Delta != nil {
			c := wire.Chunk{Delta: f.Delta}
			b.WriteString(" => ")
			b.Write(c.AppendJSON(nil))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func TestStreamOutcomes(t *testing.T) {
	frames := dataOf(mockllm.NewStream("m-a").Text("hello world").Finish("stop").Frames(), true)
	noDone := frames[:len(frames)-1]
	tests := []struct {
		name      string
		rec       recording
		overrides []scripted.Override
		model     string
		class     provider.Class // empty: completes
		is        error
		frames    int
		remaining int
	}{
		{name: "completes", rec: attempt(1, 1, targetA, wire.MarkerCompleted, "", frames...), model: "m-a", frames: len(frames)},
		{name: "recorded failure after its frames", rec: attempt(1, 1, targetA, wire.MarkerRetrying, provider.ClassTransport, noDone...),
			model: "m-a", class: provider.ClassTransport, frames: len(noDone)},
		{name: "overridden thrown stream", rec: attempt(1, 1, targetA, "", "", noDone[:2]...),
			overrides: []scripted.Override{{Step: 1, Attempt: 1, Outcome: scripted.Fail(provider.ClassStreamClosed)}},
			model:     "m-a", class: provider.ClassStreamClosed, frames: 2},
		{name: "no call left", rec: recording{}, model: "m-a", class: provider.ClassInvalidRequest, is: scripted.ErrExhausted},
		{name: "another model than recorded", rec: attempt(1, 1, targetA, wire.MarkerCompleted, "", frames...),
			model: "m-b", class: provider.ClassInvalidRequest, is: scripted.ErrDiverged, remaining: 1},
		{name: "completed without terminal frame", rec: attempt(1, 1, targetA, wire.MarkerCompleted, "", noDone...),
			model: "m-a", class: provider.ClassStreamClosed, is: scripted.ErrDiverged, frames: len(noDone)},
		{name: "completed through a malformed frame", rec: attempt(1, 1, targetA, wire.MarkerCompleted, "", frames[0], "{oops", "[DONE]"),
			model: "m-a", class: provider.ClassMalformed, is: scripted.ErrDiverged, frames: 2},
		{name: "failed before its last frame", rec: attempt(1, 1, targetA, wire.MarkerFailed, provider.ClassServer, "{oops", frames[1]),
			model: "m-a", class: provider.ClassMalformed, is: scripted.ErrDiverged, frames: 1},
		{name: "completed but empty", rec: attempt(1, 1, targetA, wire.MarkerCompleted, "", frames[0], frames[len(frames)-2], "[DONE]"),
			model: "m-a", class: provider.ClassEmpty, is: scripted.ErrDiverged, frames: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newScripted(t, derive(t, tt.rec, tt.overrides...))
			o := stream(t, a, prepare(t, a, tt.model))
			if o.class() != tt.class {
				t.Errorf("Stream() error = %v; want class %q", o.err, tt.class)
			}
			if tt.class != "" {
				var f *provider.Failure
				if !errors.As(o.err, &f) {
					t.Errorf("Stream() error = %T; want *provider.Failure", o.err)
				}
			}
			if tt.is != nil && !errors.Is(o.err, tt.is) {
				t.Errorf("Stream() error = %v; want errors.Is %v", o.err, tt.is)
			}
			if len(o.frames) != tt.frames {
				t.Errorf("Stream() relayed %d frames; want %d", len(o.frames), tt.frames)
			}
			if tt.class == "" && (o.resp.Text != "hello world" || !o.resp.Terminal || o.text() != "hello world") {
				t.Errorf("Stream() = %+v relaying %q; want terminal %q", o.resp, o.text(), "hello world")
			}
			if got := a.Remaining(); got != tt.remaining {
				t.Errorf("Remaining() = %d; want %d", got, tt.remaining)
			}
		})
	}
}

func TestStreamHang(t *testing.T) {
	frames := dataOf(mockllm.NewStream("m-a").Text("partial answer").Frames(), false)
	a := newScripted(t, derive(t, attempt(1, 1, targetA, "", "", frames...),
		scripted.Override{Step: 1, Attempt: 1, Outcome: scripted.Hang()}))
	body := prepare(t, a, "m-a")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	relayed := make(chan provider.Frame, len(frames))
	type result struct {
		resp *assemble.Response
		err  error
	}
	done := make(chan result, 1)
	go func() { // owned by this test: it ends once ctx is cancelled below
		resp, err := a.Stream(ctx, body, func(f provider.Frame) error { relayed <- f; return nil })
		done <- result{resp, err}
	}()
	var text string
	for range frames {
		select {
		case f := <-relayed:
			if f.Delta != nil {
				text += f.Delta.Text
			}
		case r := <-done:
			t.Fatalf("Stream() = %v, %v before relaying its frames; want it to relay them, then hang", r.resp, r.err)
		}
	}
	if text != "partial answer" {
		t.Errorf("Stream() relayed text %q; want %q", text, "partial answer")
	}
	select {
	case r := <-done:
		t.Fatalf("Stream() = %v, %v before its context was done; want it to hang", r.resp, r.err)
	default:
	}
	cancel()
	select {
	case r := <-done:
		var f *provider.Failure
		if !errors.As(r.err, &f) || f.Class != provider.ClassCancelled || r.resp != nil {
			t.Errorf("Stream() = %v, %v; want CANCELLED", r.resp, r.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Stream() still hangs after its context was cancelled")
	}
}

func TestStreamHangDeadline(t *testing.T) {
	role := dataOf(mockllm.NewStream("m-a").Frames(), false)
	a := newScripted(t, derive(t, attempt(1, 1, targetA, "", "", role...),
		scripted.Override{Step: 1, Attempt: 1, Outcome: scripted.Hang()}))
	body := prepare(t, a, "m-a")
	// The deadline passes while the call hangs (or, on a slow machine,
	// before its frame): TIMEOUT either way.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	_, err := a.Stream(ctx, body, func(provider.Frame) error { return nil })
	var f *provider.Failure
	if !errors.As(err, &f) || f.Class != provider.ClassTimeout {
		t.Errorf("Stream() error = %v; want TIMEOUT", err)
	}
}

func TestStreamCancelledBetweenFrames(t *testing.T) {
	frames := dataOf(mockllm.NewStream("m-a").Text("a b c").Finish("stop").Frames(), true)
	a := newScripted(t, derive(t, attempt(1, 1, targetA, wire.MarkerCompleted, "", frames...)))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	n := 0
	_, err := a.Stream(ctx, prepare(t, a, "m-a"), func(provider.Frame) error {
		n++
		if n == 2 {
			cancel()
		}
		return nil
	})
	var f *provider.Failure
	if !errors.As(err, &f) || f.Class != provider.ClassCancelled || n != 2 {
		t.Errorf("Stream() = %v after %d frames; want CANCELLED after 2", err, n)
	}
}

func TestStreamSinkError(t *testing.T) {
	frames := dataOf(mockllm.NewStream("m-a").Text("a b").Finish("stop").Frames(), true)
	a := newScripted(t, derive(t, attempt(1, 1, targetA, wire.MarkerCompleted, "", frames...)))
	sinkErr := errors.New("relay down")
	_, err := a.Stream(t.Context(), prepare(t, a, "m-a"), func(provider.Frame) error { return sinkErr })
	var f *provider.Failure
	if err != sinkErr || errors.As(err, &f) {
		t.Errorf("Stream() error = %v; want the sink's error as is", err)
	}
}

func TestStreamNotPrepared(t *testing.T) {
	a := newScripted(t, derive(t, attempt(1, 1, targetA, wire.MarkerCompleted, "", "[DONE]")))
	for _, body := range []string{``, `[]`, `{"messages":[]}`, `{"model":`} {
		_, err := a.Stream(t.Context(), []byte(body), func(provider.Frame) error { return nil })
		var f *provider.Failure
		if !errors.As(err, &f) || f.Class != provider.ClassInvalidRequest || !errors.Is(err, scripted.ErrNotPrepared) {
			t.Errorf("Stream(%q) error = %v; want INVALID_REQUEST wrapping ErrNotPrepared", body, err)
		}
	}
	if a.Remaining() != 1 {
		t.Errorf("Remaining() = %d; want 1", a.Remaining())
	}
}

func TestPrepare(t *testing.T) {
	a := newScripted(t, &scripted.Script{})
	model := provider.Model{Name: "m-a"}
	empty := ""
	withEcho := testRequest()
	withEcho.Messages = append(withEcho.Messages, provider.Message{Role: wire.RoleAssistant, Reasoning: &empty,
		ToolCalls: []wire.Call{{ID: "c1", Name: "weather", Arguments: `{"city":"Lyon"}`}}})
	withoutEcho := testRequest()
	withoutEcho.Messages = append(withoutEcho.Messages, provider.Message{Role: wire.RoleAssistant,
		ToolCalls: []wire.Call{{ID: "c1", Name: "weather", Arguments: `{"city":"Lyon"}`}}})

	var bodies [][]byte
	for _, req := range []*provider.Request{testRequest(), testRequest(), withEcho, withoutEcho} {
		b, err := a.Prepare(req, model)
		if err != nil {
			t.Fatalf("Prepare() error = %v", err)
		}
		bodies = append(bodies, b)
	}
	if !bytes.Equal(bodies[0], bodies[1]) {
		t.Errorf("Prepare() = %s then %s; want identical bodies for one request", bodies[0], bodies[1])
	}
	if bytes.Equal(bodies[2], bodies[3]) {
		t.Errorf("Prepare() = %s for both; want a present-empty reasoning echo kept apart from an absent one", bodies[2])
	}
	if got := a.Prepared(); !reflect.DeepEqual(got, bodies) {
		t.Errorf("Prepared() = %q; want %q", got, bodies)
	}
	if _, err := a.Prepare(nil, model); err == nil {
		t.Errorf("Prepare(nil) error = nil; want an error")
	}
	if got := a.Sent(); len(got) != 0 {
		t.Errorf("Sent() = %q before any Stream; want none", got)
	}
}

// eventTranslator is a stand-in for another wire API's translator, keyed
// on SSE event names as the Responses API is.
type eventTranslator struct{ asm *assemble.Assembler }

func (e eventTranslator) Frame(event string, data []byte) error {
	switch event {
	case "text":
		e.asm.Text(0, string(data))
	case "completed":
		e.asm.Finish("stop")
		e.asm.Terminal()
	default:
		return provider.Fail(provider.ClassMalformed, "unknown event", nil)
	}
	return nil
}

func (e eventTranslator) Done()                    {}
func (e eventTranslator) Asm() *assemble.Assembler { return e.asm }

func TestWithTranslator(t *testing.T) {
	rec := concat(attempt(1, 1, targetA, wire.MarkerCompleted, "", "hi ", "there", "{}"), attempt(2, 1, targetB, wire.MarkerCompleted, "", dataOf(mockllm.NewStream("m-b").Text("chat").Finish("stop").Frames(), true)...))
	for i, ev := range []string{"text", "text", "completed"} {
		rec.setEvent(i, ev)
	}
	var asked []provider.Target
	a := newScripted(t, derive(t, rec), scripted.WithTranslator(func(target provider.Target) scripted.Translator {
		asked = append(asked, target)
		if target.Provider == "primary" {
			return eventTranslator{asm: assemble.New()}
		}
		return scripted.NewChatTranslator(target)
	}))
	for _, want := range []struct {
		model, text string
	}{{"m-a", "hi there"}, {"m-b", "chat"}} {
		o := stream(t, a, prepare(t, a, want.model))
		if o.err != nil || o.resp.Text != want.text || o.text() != want.text {
			t.Errorf("Stream(%s) = %+v, %v relaying %q; want %q", want.model, o.resp, o.err, o.text(), want.text)
		}
	}
	if want := []provider.Target{targetA, targetB}; !reflect.DeepEqual(asked, want) {
		t.Errorf("translator asked for %v; want %v", asked, want)
	}
}

// finalizingTranslator applies its own response-level check: a response
// without a "done" frame is incomplete.
type finalizingTranslator struct {
	eventTranslator
	incomplete bool
}

func (f *finalizingTranslator) Frame(event string, data []byte) error {
	if event == "incomplete" {
		f.incomplete = true
		f.asm.Terminal()
		return nil
	}
	return f.eventTranslator.Frame(event, data)
}

func (f *finalizingTranslator) Finalize() (*assemble.Response, error) {
	if f.incomplete {
		return nil, provider.Fail(provider.ClassIncomplete, "incomplete", nil)
	}
	return f.asm.Response(), nil
}

func TestWithFinalizer(t *testing.T) {
	rec := concat(attempt(1, 1, targetA, wire.MarkerCompleted, "", "", ""), attempt(2, 1, targetA, wire.MarkerCompleted, "", "x", ""))
	rec.setEvent(0, "completed") // nothing in it, yet complete for this API
	rec.setEvent(1, "completed")
	rec.setEvent(2, "text")
	rec.setEvent(3, "incomplete")
	a := newScripted(t, derive(t, rec), scripted.WithTranslator(func(provider.Target) scripted.Translator {
		return &finalizingTranslator{eventTranslator: eventTranslator{asm: assemble.New()}}
	}))
	if o := stream(t, a, prepare(t, a, "m-a")); o.err != nil || !o.resp.Terminal {
		t.Errorf("Stream() = %+v, %v; want the translator's own finalized response", o.resp, o.err)
	}
	o := stream(t, a, prepare(t, a, "m-a"))
	if o.class() != provider.ClassIncomplete || !errors.Is(o.err, scripted.ErrDiverged) {
		t.Errorf("Stream() error = %v; want the translator's INCOMPLETE_RESPONSE, marked diverged", o.err)
	}
}

func TestNewRejects(t *testing.T) {
	if _, err := scripted.New(nil); err == nil {
		t.Errorf("New(nil) error = nil; want an error")
	}
	if _, err := scripted.New(&scripted.Script{}, scripted.WithTranslator(nil)); err == nil {
		t.Errorf("New(WithTranslator(nil)) error = nil; want an error")
	}
}

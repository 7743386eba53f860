package scripted_test

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaichat"
	"github.com/turnstream/turnstream/internal/provider/scripted"
	"github.com/turnstream/turnstream/pkg/wire"
)

const (
	session = "s1"
	turnID  = "t1"
)

var (
	targetA = provider.Target{Provider: "primary", Model: "m-a"}
	targetB = provider.Target{Provider: "backup", Model: "m-b"}
)

// recording is a turn's record as Load returns it and Derive takes it:
// the raw frames and the chunks.
type recording struct {
	frames []wire.RawFrame
	chunks []wire.Chunk
}

// attempt builds the record of one attempt as the turn loop writes it: a
// raw frame and its chunk (without a delta) per raw, then the end marker
// chunk unless marker is "".
func attempt(step, n int, target provider.Target, marker string, class provider.Class, raws ...string) recording {
	var out recording
	for i, r := range raws {
		out.frames = append(out.frames, wire.RawFrame{
			SessionID: session, TurnID: turnID, Step: step, Attempt: n, Seq: i + 1,
			Provider: target.Provider, Model: target.Model, Bytes: []byte(r),
		})
		out.chunks = append(out.chunks, wire.Chunk{
			SessionID: session, TurnID: turnID, Step: step, Attempt: n, Seq: i + 1,
			Provider: target.Provider, Model: target.Model,
		})
	}
	if marker != "" {
		out.chunks = append(out.chunks, wire.Chunk{
			SessionID: session, TurnID: turnID, Step: step, Attempt: n, Seq: len(raws) + 1,
			Provider: target.Provider, Model: target.Model, Marker: marker, Failure: string(class),
		})
	}
	return out
}

func concat(parts ...recording) recording {
	var out recording
	for _, p := range parts {
		out.frames = append(out.frames, p.frames...)
		out.chunks = append(out.chunks, p.chunks...)
	}
	return out
}

// setEvent names the SSE event of the i-th raw frame and of its chunk.
func (r recording) setEvent(i int, event string) {
	f := &r.frames[i]
	f.Event = event
	for j := range r.chunks {
		if c := &r.chunks[j]; c.Marker == "" && c.Step == f.Step && c.Attempt == f.Attempt && c.Seq == f.Seq {
			c.Event = event
		}
	}
}

// clone copies r's slices, so a change to the copy leaves r as it was.
func (r recording) clone() recording {
	out := recording{frames: slices.Clone(r.frames), chunks: slices.Clone(r.chunks)}
	for i := range out.frames {
		out.frames[i].Bytes = bytes.Clone(out.frames[i].Bytes)
	}
	return out
}

// dataOf returns the data of mockllm frames, then "[DONE]" if done.
func dataOf(frames []mockllm.Frame, done bool) []string {
	var out []string
	for _, f := range frames {
		out = append(out, f.Data)
	}
	if done {
		out = append(out, "[DONE]")
	}
	return out
}

// outcome is what one Stream call produced.
type outcome struct {
	resp   *assemble.Response
	err    error
	frames []provider.Frame
}

func (o outcome) class() provider.Class {
	var f *provider.Failure
	if errors.As(o.err, &f) {
		return f.Class
	}
	return ""
}

func (o outcome) text() string {
	var s string
	for _, f := range o.frames {
		if f.Delta != nil {
			s += f.Delta.Text
		}
	}
	return s
}

// stream runs a.Stream with a deadline that only prevents a hang.
func stream(t *testing.T, a provider.Adapter, body []byte) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var o outcome
	o.resp, o.err = a.Stream(ctx, body, func(f provider.Frame) error {
		o.frames = append(o.frames, f)
		return nil
	})
	if (o.resp == nil) == (o.err == nil) {
		t.Fatalf("Stream() = %v, %v; want exactly one of response and error", o.resp, o.err)
	}
	return o
}

func newScripted(t *testing.T, s *scripted.Script, opts ...scripted.Option) *scripted.Adapter {
	t.Helper()
	a, err := scripted.New(s, opts...)
	if err != nil {
		t.Fatalf("New() error = %v", err)
	}
	return a
}

func derive(t *testing.T, r recording, overrides ...scripted.Override) *scripted.Script {
	t.Helper()
	s, err := scripted.Derive(r.frames, r.chunks, overrides...)
	if err != nil {
		t.Fatalf("Derive() error = %v", err)
	}
	return s
}

func prepare(t *testing.T, a provider.Adapter, model string) []byte {
	t.Helper()
	body, err := a.Prepare(testRequest(), provider.Model{Name: model, Capabilities: scripted.API.Capabilities})
	if err != nil {
		t.Fatalf("Prepare() error = %v", err)
	}
	return body
}

func testRequest() *provider.Request {
	return &provider.Request{
		System:   "be brief",
		Messages: []provider.Message{{Role: wire.RoleUser, Content: "weather in Lyon and Oslo?"}},
		Tools: []wire.Tool{{Name: "weather", Parameters: map[string]any{
			"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}},
		}}},
	}
}

// mockAdapter is a real openaichat adapter on a mockllm server answering
// with rs in order.
func mockAdapter(t *testing.T, rs ...*mockllm.Response) *openaichat.Adapter {
	t.Helper()
	srv := httptest.NewServer(mockllm.New(mockllm.Queue(rs...)))
	t.Cleanup(srv.Close)
	a, err := openaichat.New(openaichat.Options{BaseURL: srv.URL + "/v1", APIKey: "sk-test"})
	if err != nil {
		t.Fatalf("openaichat.New() error = %v", err)
	}
	return a
}

// recorder is a provider.Observer that writes the record of one step the
// way the turn loop does (internal/turn stepObserver): a raw frame and a
// chunk per frame, and an end marker chunk per attempt.
type recorder struct {
	step    int
	attempt int
	seq     int
	log     *recording
	events  []provider.Event
}

func (r *recorder) Frame(n int, target provider.Target, f provider.Frame) error {
	r.next(n)
	r.log.frames = append(r.log.frames, wire.RawFrame{
		SessionID: session, TurnID: turnID, Step: r.step, Attempt: n, Seq: r.seq,
		Provider: target.Provider, Model: target.Model, Event: f.Event, Bytes: bytes.Clone(f.Raw),
	})
	r.log.chunks = append(r.log.chunks, wire.Chunk{
		SessionID: session, TurnID: turnID, Step: r.step, Attempt: n, Seq: r.seq,
		Provider: target.Provider, Model: target.Model, Event: f.Event, Delta: f.Delta,
	})
	return nil
}

func (r *recorder) Event(ev provider.Event) {
	r.events = append(r.events, ev)
	if ev.Kind != provider.EventFinish {
		return
	}
	r.next(ev.Attempt)
	c := wire.Chunk{
		SessionID: session, TurnID: turnID, Step: r.step, Attempt: ev.Attempt, Seq: r.seq,
		Provider: ev.Target.Provider, Model: ev.Target.Model, Marker: ev.Marker,
	}
	if ev.Failure != nil {
		c.Failure = string(ev.Failure.Class)
	}
	r.log.chunks = append(r.log.chunks, c)
}

func (r *recorder) next(n int) {
	if n != r.attempt {
		r.attempt, r.seq = n, 0
	}
	r.seq++
}

// fakeClock advances only when slept on: no wall time passes in retries.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps int
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.sleeps++
	c.mu.Unlock()
	return ctx.Err()
}

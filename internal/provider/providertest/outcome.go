package providertest

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/pkg/wire"
)

// Outcome is what one Stream call produced.
type Outcome struct {
	Resp   *assemble.Response
	Err    error
	Frames []provider.Frame
}

// Failure is Err as a *provider.Failure, nil if it is none.
func (o Outcome) Failure() *provider.Failure {
	var f *provider.Failure
	if errors.As(o.Err, &f) {
		return f
	}
	return nil
}

// DeltaText joins the visible text of every relayed delta.
func (o Outcome) DeltaText() string {
	var b strings.Builder
	for _, f := range o.Frames {
		if f.Delta != nil {
			b.WriteString(f.Delta.Text)
		}
	}
	return b.String()
}

// DeltaArgs joins the relayed argument deltas per block index.
func (o Outcome) DeltaArgs() map[int]string {
	m := map[int]string{}
	for _, f := range o.Frames {
		if f.Delta == nil {
			continue
		}
		for _, tc := range f.Delta.ToolCalls {
			m[tc.Index] += tc.Arguments
		}
	}
	return m
}

// Record returns a sink that appends every frame to *frames, its Raw
// copied: an adapter may reuse the bytes once the sink returned.
func Record(frames *[]provider.Frame) provider.Sink {
	return func(f provider.Frame) error {
		f.Raw = append([]byte(nil), f.Raw...)
		*frames = append(*frames, f)
		return nil
	}
}

// Stream runs a.Stream on body, recording every frame, with a deadline
// that only prevents a hang. It fails t unless a returned exactly one of a
// response and a classified *provider.Failure.
func Stream(t testing.TB, a provider.Adapter, body []byte) Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var o Outcome
	o.Resp, o.Err = a.Stream(ctx, body, Record(&o.Frames))
	if (o.Resp == nil) == (o.Err == nil) {
		t.Fatalf("Stream() = %v, %v; want exactly one of response and error", o.Resp, o.Err)
	}
	if f := o.Failure(); o.Err != nil && (f == nil || f.Class == "") {
		t.Fatalf("Stream() error = %T %v; want a classified *provider.Failure", o.Err, o.Err)
	}
	return o
}

// CheckFailure fails t unless o failed with want's class, HTTP status,
// retry hint and request id, and returns the failure.
func CheckFailure(t testing.TB, o Outcome, want provider.Failure) *provider.Failure {
	t.Helper()
	f := o.Failure()
	if f == nil {
		t.Fatalf("Stream() = %+v; want failure %s", o.Resp, want.Class)
	}
	if f.Class != want.Class || f.Status != want.Status || f.RetryAfter != want.RetryAfter || f.RequestID != want.RequestID {
		t.Errorf("Stream() failure = {%s %d %v %q}; want {%s %d %v %q}",
			f.Class, f.Status, f.RetryAfter, f.RequestID, want.Class, want.Status, want.RetryAfter, want.RequestID)
	}
	return f
}

// CheckRelayed fails t unless frames are the first of body's data lines,
// in order, byte for byte (each frame relayed as it arrived), and returns
// how many data lines body has.
func CheckRelayed(t testing.TB, frames []provider.Frame, body []byte) int {
	t.Helper()
	want := DataLines(body)
	if len(frames) > len(want) {
		t.Fatalf("Stream() relayed %d frames; the stream has %d", len(frames), len(want))
	}
	for i, f := range frames {
		if !bytes.Equal(f.Raw, want[i]) {
			t.Errorf("frame %d Raw = %q; want %q", i, f.Raw, want[i])
		}
	}
	return len(want)
}

// WantResponse is what a successful Stream must have returned.
type WantResponse struct {
	Text, Reasoning   string
	Finish, RawFinish string
	Usage             *wire.Usage
}

// CheckResponse fails t unless o succeeded with want's text (in the
// response and, alone, in the relayed deltas: reasoning never is one),
// reasoning, finish and usage, and returns the response.
func CheckResponse(t testing.TB, o Outcome, want WantResponse) *assemble.Response {
	t.Helper()
	if o.Err != nil {
		t.Fatalf("Stream() error = %v; want a response", o.Err)
	}
	r := o.Resp
	if r.Text != want.Text || r.Reasoning != want.Reasoning {
		t.Errorf("Stream() text, reasoning = %q, %q; want %q, %q", r.Text, r.Reasoning, want.Text, want.Reasoning)
	}
	if got := o.DeltaText(); got != want.Text {
		t.Errorf("relayed text = %q; want %q (reasoning never in deltas)", got, want.Text)
	}
	if r.FinishReason != want.Finish || r.RawFinishReason != want.RawFinish {
		t.Errorf("Stream() finish = %q (%q); want %q (%q)", r.FinishReason, r.RawFinishReason, want.Finish, want.RawFinish)
	}
	if !reflect.DeepEqual(r.Usage, want.Usage) {
		t.Errorf("Stream() usage = %+v; want %+v", r.Usage, want.Usage)
	}
	return r
}

package bus_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/pkg/wire"
)

// storedRaw reads the raw frames of a turn back from TURN_RAW, in stream
// order, with direct gets (what an operator's tool does).
func storedRaw(t *testing.T, js jetstream.JetStream, session, turn string) []wire.RawFrame {
	t.Helper()
	ctx := t.Context()
	s, err := js.Stream(ctx, wire.StreamRaw)
	if err != nil {
		t.Fatal(err)
	}
	subj := wire.Subjects{}.Raw(session, turn)
	var out []wire.RawFrame
	for seq := uint64(1); ; seq++ {
		m, err := s.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subj))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		seq = m.Sequence
		if m.Header.Get(wire.HeaderContentType) != "" {
			t.Errorf("raw frame at %d has a Content-Type %q; want none (the body is the provider's bytes)", seq, m.Header.Get(wire.HeaderContentType))
		}
		f, err := wire.Subjects{}.ParseRawFrame(m.Subject, m.Header, m.Data)
		if err != nil {
			t.Fatalf("ParseRawFrame(stored record %d) = %v", seq, err)
		}
		out = append(out, f)
	}
}

// TestTurnWriterRaw: raw frames are stored byte for byte, under the
// headers of their chunk, and read back as they were written; the writer
// copies the bytes it is given.
func TestTurnWriterRaw(t *testing.T) {
	js, b, st := leaseEnv(t)
	ctx := t.Context()
	l, err := b.TakeLease(ctx, st, "s1", "t1", 1, "w")
	if err != nil {
		t.Fatal(err)
	}
	for _, codec := range []wire.Codec{wire.JSON, wire.Msgpack} {
		t.Run(codec.ContentType(), func(t *testing.T) {
			w := l.Turn(codec, nil)
			before := len(storedRaw(t, js, "s1", "t1"))
			frames := []wire.RawFrame{
				{SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 1, Seq: 1, Provider: "openai", Model: "gpt-4o-mini",
					Bytes: []byte(`{ "choices" : [{"delta":{"content":"a<b"}}] }`)},
				{SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 1, Seq: 2, Provider: "openai", Model: "gpt-4o-mini",
					Event: " odd event\u00e9 ", Bytes: []byte("\xff\x00 not json\r\n")},
				{SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 1, Seq: 3, Provider: "openai", Model: "gpt-4o-mini",
					Bytes: []byte("[DONE]")},
			}
			for i := range frames {
				in := frames[i]
				in.Bytes = bytes.Clone(frames[i].Bytes)
				if err := w.Raw(&in); err != nil {
					t.Fatalf("Raw(%d) = %v", i, err)
				}
				in.Bytes[0] ^= 0xff // the provider reuses its buffer
			}
			if err := w.Flush(ctx); err != nil {
				t.Fatalf("Flush() = %v", err)
			}
			got := storedRaw(t, js, "s1", "t1")[before:]
			if !reflect.DeepEqual(got, frames) {
				t.Errorf("stored raw frames =\n%+v\nwant\n%+v", got, frames)
			}
		})
	}

	w := l.Turn(wire.JSON, nil)
	if err := w.Raw(&wire.RawFrame{SessionID: "s1", TurnID: "other", Step: 1, Attempt: 1, Seq: 1}); err == nil {
		t.Error("Raw(frame of another turn) = nil; want an error")
	}
	var ve *wire.ValidationError
	if err := w.Raw(&wire.RawFrame{SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 1}); !errors.As(err, &ve) {
		t.Errorf("Raw(frame without a seq) = %v; want a *wire.ValidationError", err)
	}
	// A frame the server cannot take is the frame's failure, not a
	// transport one.
	huge := &wire.RawFrame{SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 2, Seq: 1, Bytes: bytes.Repeat([]byte("x"), int(js.Conn().MaxPayload()))}
	if err := w.Raw(huge); !errors.Is(err, wire.ErrRecordTooLarge) {
		t.Errorf("Raw(frame of max payload) = %v; want wire.ErrRecordTooLarge", err)
	}
	if err := w.Flush(ctx); !errors.Is(err, wire.ErrRecordTooLarge) {
		t.Errorf("Flush() after a refused frame = %v; want it reported again", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestTurnWriterReplicatedRaw: on a replicated topology, where fenced
// records of a kind go one at a time, a step's chunks and raw frames all
// arrive, in order, and a zombie's are refused.
func TestTurnWriterReplicatedRaw(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	_, js := c.JetStream()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := bus.EnsureRetry(ctx, js, bus.Topology{Replicas: 3}, nil); err != nil {
		t.Fatalf("EnsureRetry() = %v", err)
	}
	b, err := bus.New(ctx, js, wire.Subjects{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old, err := b.TakeLease(ctx, st, "s1", "t1", 1, "a")
	if err != nil {
		t.Fatal(err)
	}
	ow := old.Turn(wire.JSON, nil)
	const n = 40
	var want []wire.RawFrame
	for i := 1; i <= n; i++ {
		f := wire.RawFrame{SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 1, Seq: i, Provider: "p", Model: "m",
			Bytes: fmt.Appendf(nil, `{"i":%d}`, i)}
		want = append(want, f)
		if err := ow.Raw(&f); err != nil {
			t.Fatalf("Raw(%d) = %v", i, err)
		}
		if err := ow.Chunk(&wire.Chunk{SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 1, Seq: i, Delta: &wire.Delta{Text: "x"}}); err != nil {
			t.Fatalf("Chunk(%d) = %v", i, err)
		}
	}
	if err := ow.Flush(ctx); err != nil {
		t.Fatalf("Flush() = %v", err)
	}
	if got := storedRaw(t, js, "s1", "t1"); !reflect.DeepEqual(got, want) {
		t.Errorf("stored raw frames = %d frames %+v; want the %d written, in order", len(got), got, n)
	}
	if _, err := b.TakeLease(ctx, st, "s1", "t1", 1, "b"); err != nil {
		t.Fatal(err)
	}
	zombie := wire.RawFrame{SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 2, Seq: 1, Bytes: []byte("zombie")}
	if err := ow.Raw(&zombie); err != nil && !errors.Is(err, bus.ErrFenced) {
		t.Fatalf("zombie Raw() = %v", err)
	}
	if err := ow.Flush(ctx); !errors.Is(err, bus.ErrFenced) {
		t.Errorf("zombie Flush() = %v; want ErrFenced", err)
	}
	if got := storedRaw(t, js, "s1", "t1"); len(got) != n {
		t.Errorf("raw frames stored after the zombie wrote: %d; want %d", len(got), n)
	}
}

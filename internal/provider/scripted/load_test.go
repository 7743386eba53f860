package scripted_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/scripted"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestLoadRoundTrip writes a recorded turn's raw frames and chunks through
// the bus to a real embedded JetStream, loads them back, derives the script
// and replays it: the loaded record is the written one, byte for byte, in
// both encodings.
func TestLoadRoundTrip(t *testing.T) {
	primary, backup := defaultRecording()
	orig, requests := original(t, primary, backup)
	srv := natstest.Start(t)
	_, js := srv.JetStream()
	if err := (bus.Topology{}).Ensure(t.Context(), js); err != nil {
		t.Fatalf("Ensure() error = %v", err)
	}
	b, err := bus.New(t.Context(), js, wire.Subjects{})
	if err != nil {
		t.Fatalf("bus.New() error = %v", err)
	}
	for _, tt := range []struct {
		name  string
		codec wire.Codec
		turn  string
	}{
		{"json", wire.JSON, "t-json"},
		{"msgpack", wire.Msgpack, "t-msgpack"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want := withTurnID(orig.log, tt.turn)
			w := b.Turn(session, tt.turn, tt.codec, nil)
			other := b.Turn(session, tt.turn+"-other", tt.codec, nil)
			for i := range max(len(want.frames), len(want.chunks)) {
				if i < len(want.frames) {
					if err := w.Raw(&want.frames[i]); err != nil {
						t.Fatalf("Raw() error = %v", err)
					}
				}
				if i < len(want.chunks) {
					if err := w.Chunk(&want.chunks[i]); err != nil {
						t.Fatalf("Chunk() error = %v", err)
					}
				}
				// Another turn of the session interleaves: not part of this record.
				if i%5 == 0 {
					of := wire.RawFrame{SessionID: session, TurnID: tt.turn + "-other", Step: 1, Attempt: 1, Seq: i + 1, Bytes: []byte(`{}`)}
					oc := wire.Chunk{SessionID: session, TurnID: tt.turn + "-other", Step: 1, Attempt: 1, Seq: i + 1}
					if err := other.Raw(&of); err != nil {
						t.Fatalf("Raw(other) error = %v", err)
					}
					if err := other.Chunk(&oc); err != nil {
						t.Fatalf("Chunk(other) error = %v", err)
					}
				}
			}
			for _, w := range []*bus.TurnWriter{w, other} {
				if err := w.Flush(t.Context()); err != nil {
					t.Fatalf("Flush() error = %v", err)
				}
			}

			frames, chunks, err := scripted.Load(t.Context(), js, wire.Subjects{}, session, tt.turn)
			if err != nil {
				t.Fatalf("Load() error = %v", err)
			}
			got := recording{frames: frames, chunks: chunks}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Load() =\n%s\nwant\n%s", renderLog(got), renderLog(want))
			}
			consumers(t, js, 0)

			re, a := rerun(t, derive(t, got), requests)
			compare(t, orig, re)
			if a.Remaining() != 0 {
				t.Errorf("Remaining() = %d; want 0", a.Remaining())
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	srv := natstest.Start(t)
	_, js := srv.JetStream()
	if _, _, err := scripted.Load(t.Context(), js, wire.Subjects{}, session, turnID); err == nil {
		t.Errorf("Load() without TURN_RAW and TURN_CHUNKS error = nil; want an error")
	}
	if err := (bus.Topology{}).Ensure(t.Context(), js); err != nil {
		t.Fatalf("Ensure() error = %v", err)
	}
	if _, _, err := scripted.Load(t.Context(), js, wire.Subjects{}, session, "never-ran"); !errors.Is(err, scripted.ErrNoChunks) {
		t.Errorf("Load(never-ran) error = %v; want ErrNoChunks", err)
	}
	for _, tt := range []struct{ session, turn string }{{"s.*", turnID}, {session, ">"}, {"", turnID}} {
		if _, _, err := scripted.Load(t.Context(), js, wire.Subjects{}, tt.session, tt.turn); err == nil {
			t.Errorf("Load(%q, %q) error = nil; want an error", tt.session, tt.turn)
		}
	}

	b, err := bus.New(t.Context(), js, wire.Subjects{})
	if err != nil {
		t.Fatalf("bus.New() error = %v", err)
	}
	write := func(turn string, rec recording) {
		t.Helper()
		w := b.Turn(session, turn, wire.JSON, nil)
		for i := range rec.frames {
			if err := w.Raw(&rec.frames[i]); err != nil {
				t.Fatalf("Raw() error = %v", err)
			}
		}
		for i := range rec.chunks {
			if err := w.Chunk(&rec.chunks[i]); err != nil {
				t.Fatalf("Chunk() error = %v", err)
			}
		}
		if err := w.Flush(t.Context()); err != nil {
			t.Fatalf("Flush() error = %v", err)
		}
	}
	frames := dataOf(mockllm.NewStream("m-a").Text("ok").Finish("stop").Frames(), true)

	// Either stream alone is loaded: Derive judges what is missing.
	rawOnly := withTurnID(attempt(1, 1, targetA, "", "", frames...), "raw-only")
	rawOnly.chunks = nil
	write("raw-only", rawOnly)
	if f, c, err := scripted.Load(t.Context(), js, wire.Subjects{}, session, "raw-only"); err != nil || len(f) != len(frames) || len(c) != 0 {
		t.Errorf("Load(raw-only) = %d frames, %d chunks, %v; want %d frames and no chunks", len(f), len(c), err, len(frames))
	}
	markerOnly := withTurnID(attempt(1, 1, targetA, wire.MarkerRetrying, provider.ClassServer), "marker-only")
	write("marker-only", markerOnly)
	if f, c, err := scripted.Load(t.Context(), js, wire.Subjects{}, session, "marker-only"); err != nil || len(f) != 0 || len(c) != 1 {
		t.Errorf("Load(marker-only) = %d frames, %d chunks, %v; want no frames and 1 chunk", len(f), len(c), err)
	}

	// A record that does not read fails the load: a script with a hole
	// would replay another turn.
	for _, tt := range []struct {
		name string
		turn string
		msg  *nats.Msg
	}{
		{"undecodable chunk", "bad-chunk", &nats.Msg{Subject: wire.Subjects{}.Chunk(session, "bad-chunk"), Data: []byte(`{"step":"one"`)}},
		{"raw frame without its seq", "bad-raw", &nats.Msg{Subject: wire.Subjects{}.Raw(session, "bad-raw"), Data: []byte(`{}`),
			Header: nats.Header{wire.HeaderStep: {"1"}, wire.HeaderAttempt: {"1"}}}},
		{"raw frame with a bad step", "bad-step", &nats.Msg{Subject: wire.Subjects{}.Raw(session, "bad-step"), Data: []byte(`{}`),
			Header: nats.Header{wire.HeaderStep: {"one"}, wire.HeaderAttempt: {"1"}, wire.HeaderSeq: {"2"}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			write(tt.turn, withTurnID(attempt(1, 1, targetA, wire.MarkerCompleted, "", frames...), tt.turn))
			if _, err := js.PublishMsg(t.Context(), tt.msg); err != nil {
				t.Fatalf("PublishMsg() error = %v", err)
			}
			if _, _, err := scripted.Load(t.Context(), js, wire.Subjects{}, session, tt.turn); err == nil {
				t.Errorf("Load() with an unreadable record error = nil; want an error")
			}
		})
	}
	consumers(t, js, 0)
}

// consumers checks how many consumers TURN_RAW and TURN_CHUNKS have: Load
// deletes its own.
func consumers(t *testing.T, js jetstream.JetStream, want int) {
	t.Helper()
	for _, name := range []string{wire.StreamRaw, wire.StreamChunks} {
		s, err := js.Stream(t.Context(), name)
		if err != nil {
			t.Fatalf("Stream(%s) error = %v", name, err)
		}
		info, err := s.Info(t.Context())
		if err != nil {
			t.Fatalf("Info() error = %v", err)
		}
		if info.State.Consumers != want {
			t.Errorf("%s consumers = %d; want %d", name, info.State.Consumers, want)
		}
	}
}

func withTurnID(log recording, turn string) recording {
	out := log.clone()
	for i := range out.frames {
		out.frames[i].TurnID = turn
	}
	for i := range out.chunks {
		out.chunks[i].TurnID = turn
	}
	return out
}

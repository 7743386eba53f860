package scripted_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/internal/provider/scripted"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestLoadRoundTrip writes a recorded turn's chunks through the bus to a
// real embedded JetStream, loads them back, derives the script and replays
// it: the loaded log is the written one, byte for byte, in both encodings.
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
			for i := range want {
				if err := w.Chunk(&want[i]); err != nil {
					t.Fatalf("Chunk() error = %v", err)
				}
				// Another turn of the session interleaves: not part of this log.
				if i%5 == 0 {
					other := wire.Chunk{SessionID: session, TurnID: tt.turn + "-other", Step: 1, Attempt: 1, Seq: i + 1, Raw: []byte(`{}`)}
					if err := b.Turn(session, tt.turn+"-other", tt.codec, nil).Chunk(&other); err != nil {
						t.Fatalf("Chunk(other) error = %v", err)
					}
				}
			}
			if err := w.Flush(t.Context()); err != nil {
				t.Fatalf("Flush() error = %v", err)
			}

			got, err := scripted.Load(t.Context(), js, wire.Subjects{}, session, tt.turn)
			if err != nil {
				t.Fatalf("Load() error = %v", err)
			}
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
	if _, err := scripted.Load(t.Context(), js, wire.Subjects{}, session, turnID); err == nil {
		t.Errorf("Load() without TURN_CHUNKS error = nil; want an error")
	}
	if err := (bus.Topology{}).Ensure(t.Context(), js); err != nil {
		t.Fatalf("Ensure() error = %v", err)
	}
	if _, err := scripted.Load(t.Context(), js, wire.Subjects{}, session, "never-ran"); !errors.Is(err, scripted.ErrNoChunks) {
		t.Errorf("Load(never-ran) error = %v; want ErrNoChunks", err)
	}
	for _, tt := range []struct{ session, turn string }{{"s.*", turnID}, {session, ">"}, {"", turnID}} {
		if _, err := scripted.Load(t.Context(), js, wire.Subjects{}, tt.session, tt.turn); err == nil {
			t.Errorf("Load(%q, %q) error = nil; want an error", tt.session, tt.turn)
		}
	}

	// A record that does not decode fails the load: a script with a hole
	// would replay another turn.
	b, err := bus.New(t.Context(), js, wire.Subjects{})
	if err != nil {
		t.Fatalf("bus.New() error = %v", err)
	}
	w := b.Turn(session, turnID, wire.JSON, nil)
	frames := dataOf(mockllm.NewStream("m-a").Text("ok").Finish("stop").Frames(), true)
	for _, c := range attempt(1, 1, targetA, wire.MarkerCompleted, "", frames...) {
		if err := w.Chunk(&c); err != nil {
			t.Fatalf("Chunk() error = %v", err)
		}
	}
	if err := w.Flush(t.Context()); err != nil {
		t.Fatalf("Flush() error = %v", err)
	}
	if _, err := js.Publish(t.Context(), wire.Subjects{}.Chunk(session, turnID), []byte(`{"step":"one"`)); err != nil {
		t.Fatalf("Publish() error = %v", err)
	}
	if _, err := scripted.Load(t.Context(), js, wire.Subjects{}, session, turnID); err == nil {
		t.Errorf("Load() with an undecodable record error = nil; want an error")
	}
	consumers(t, js, 0)
}

// consumers checks how many consumers TURN_CHUNKS has: Load deletes its own.
func consumers(t *testing.T, js jetstream.JetStream, want int) {
	t.Helper()
	s, err := js.Stream(t.Context(), wire.StreamChunks)
	if err != nil {
		t.Fatalf("Stream(%s) error = %v", wire.StreamChunks, err)
	}
	info, err := s.Info(t.Context())
	if err != nil {
		t.Fatalf("Info() error = %v", err)
	}
	if info.State.Consumers != want {
		t.Errorf("%s consumers = %d; want %d", wire.StreamChunks, info.State.Consumers, want)
	}
}

func withTurnID(log []wire.Chunk, turn string) []wire.Chunk {
	out := make([]wire.Chunk, len(log))
	copy(out, log)
	for i := range out {
		out[i].TurnID = turn
	}
	return out
}

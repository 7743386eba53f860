package scripted_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/scripted"
	"github.com/turnstream/turnstream/pkg/wire"
)

// summary renders a script compactly: step/attempt target frames outcome marker.
func summary(s *scripted.Script) []string {
	var out []string
	for _, c := range s.Calls {
		var raws []string
		for _, f := range c.Frames {
			raws = append(raws, string(f.Raw))
		}
		out = append(out, fmt.Sprintf("%d/%d %s [%s] %s %s", c.Step, c.Attempt, c.Target, strings.Join(raws, " "), c.Outcome, c.Marker))
	}
	return out
}

func TestDerive(t *testing.T) {
	const (
		ok   = wire.MarkerCompleted
		retr = wire.MarkerRetrying
		fail = wire.MarkerFailed
	)
	tests := []struct {
		name      string
		rec       recording
		overrides []scripted.Override
		want      []string
		wantErr   error
		// naming must appear in the error.
		naming string
	}{
		{
			name: "empty record",
			want: nil,
		},
		{
			name: "single completed attempt",
			rec:  attempt(1, 1, targetA, ok, "", "a", "b", "[DONE]"),
			want: []string{"1/1 primary/m-a [a b [DONE]] complete completed"},
		},
		{
			name: "retry then success in one step",
			rec: concat(
				attempt(1, 1, targetA, retr, provider.ClassServer),
				attempt(1, 2, targetA, ok, "", "x", "[DONE]"),
			),
			want: []string{
				"1/1 primary/m-a [] fail SERVER retrying",
				"1/2 primary/m-a [x [DONE]] complete completed",
			},
		},
		{
			name: "partial frames of a failed attempt stay in its call",
			rec: concat(
				attempt(1, 1, targetA, retr, provider.ClassTransport, "p1", "p2"),
				attempt(1, 2, targetA, ok, "", "x", "[DONE]"),
			),
			want: []string{
				"1/1 primary/m-a [p1 p2] fail TRANSPORT retrying",
				"1/2 primary/m-a [x [DONE]] complete completed",
			},
		},
		{
			name: "fallback across targets",
			rec: concat(
				attempt(1, 1, targetA, retr, provider.ClassServer),
				attempt(1, 2, targetA, retr, provider.ClassRateLimit),
				attempt(1, 3, targetA, fail, provider.ClassServer),
				attempt(1, 4, targetB, ok, "", "y", "[DONE]"),
			),
			want: []string{
				"1/1 primary/m-a [] fail SERVER retrying",
				"1/2 primary/m-a [] fail RATE_LIMIT retrying",
				"1/3 primary/m-a [] fail SERVER failed",
				"1/4 backup/m-b [y [DONE]] complete completed",
			},
		},
		{
			name: "multiple steps, attempts counted per step",
			rec: concat(
				attempt(1, 1, targetA, ok, "", "t", "[DONE]"),
				attempt(2, 1, targetA, retr, provider.ClassEmpty, "[DONE]"),
				attempt(2, 2, targetA, ok, "", "u", "[DONE]"),
				attempt(4, 1, targetB, ok, "", "v", "[DONE]"),
			),
			want: []string{
				"1/1 primary/m-a [t [DONE]] complete completed",
				"2/1 primary/m-a [[DONE]] fail EMPTY_RESPONSE retrying",
				"2/2 primary/m-a [u [DONE]] complete completed",
				"4/1 backup/m-b [v [DONE]] complete completed",
			},
		},
		{
			name: "arrival order does not matter",
			rec: reversed(concat(
				attempt(1, 1, targetA, retr, provider.ClassServer, "p"),
				attempt(1, 2, targetA, ok, "", "x", "[DONE]"),
				attempt(2, 1, targetA, ok, "", "z", "[DONE]"),
			)),
			want: []string{
				"1/1 primary/m-a [p] fail SERVER retrying",
				"1/2 primary/m-a [x [DONE]] complete completed",
				"2/1 primary/m-a [z [DONE]] complete completed",
			},
		},
		{
			name: "missing marker without override",
			rec: concat(
				attempt(1, 1, targetA, ok, "", "t", "[DONE]"),
				attempt(2, 1, targetA, "", "", "half"),
			),
			wantErr: scripted.ErrNoMarker,
			naming:  "step 2 attempt 1",
		},
		{
			name: "missing marker of a retry",
			rec: concat(
				attempt(3, 1, targetA, retr, provider.ClassServer),
				attempt(3, 2, targetA, "", "", "half", "more"),
			),
			wantErr: scripted.ErrNoMarker,
			naming:  "step 3 attempt 2",
		},
		{
			name: "thrown stream supplied by an override",
			rec: concat(
				attempt(1, 1, targetA, "", "", "half"),
				attempt(1, 2, targetA, ok, "", "x", "[DONE]"),
			),
			overrides: []scripted.Override{{Step: 1, Attempt: 1, Outcome: scripted.Fail(provider.ClassTransport)}},
			want: []string{
				"1/1 primary/m-a [half] fail TRANSPORT ",
				"1/2 primary/m-a [x [DONE]] complete completed",
			},
		},
		{
			name:      "hang supplied by an override",
			rec:       attempt(1, 1, targetB, "", "", "half"),
			overrides: []scripted.Override{{Step: 1, Attempt: 1, Outcome: scripted.Hang()}},
			want:      []string{"1/1 backup/m-b [half] hang "},
		},
		{
			name:      "completion supplied by an override (crash after the terminal frame)",
			rec:       attempt(1, 1, targetA, "", "", "x", "[DONE]"),
			overrides: []scripted.Override{{Step: 1, Attempt: 1, Outcome: scripted.Complete()}},
			want:      []string{"1/1 primary/m-a [x [DONE]] complete "},
		},
		{
			name:      "override contradicting a recorded marker",
			rec:       attempt(1, 1, targetA, ok, "", "x", "[DONE]"),
			overrides: []scripted.Override{{Step: 1, Attempt: 1, Outcome: scripted.Hang()}},
			wantErr:   scripted.ErrOverride,
			naming:    "step 1 attempt 1",
		},
		{
			name:      "override of no attempt",
			rec:       attempt(1, 1, targetA, ok, "", "x", "[DONE]"),
			overrides: []scripted.Override{{Step: 1, Attempt: 2, Outcome: scripted.Hang()}},
			wantErr:   scripted.ErrOverride,
			naming:    "step 1 attempt 2",
		},
		{
			name:      "override without outcome",
			rec:       attempt(1, 1, targetA, "", "", "x"),
			overrides: []scripted.Override{{Step: 1, Attempt: 1}},
			wantErr:   scripted.ErrOverride,
		},
		{
			name:      "override failing without class",
			rec:       attempt(1, 1, targetA, "", "", "x"),
			overrides: []scripted.Override{{Step: 1, Attempt: 1, Outcome: scripted.Outcome{Kind: scripted.KindFail}}},
			wantErr:   scripted.ErrOverride,
		},
		{
			name: "override given twice",
			rec:  attempt(1, 1, targetA, "", "", "x"),
			overrides: []scripted.Override{
				{Step: 1, Attempt: 1, Outcome: scripted.Hang()},
				{Step: 1, Attempt: 1, Outcome: scripted.Hang()},
			},
			wantErr: scripted.ErrOverride,
		},
		{
			name:    "sequence gap",
			rec:     withoutFrame(attempt(1, 1, targetA, ok, "", "a", "b", "[DONE]"), 1),
			wantErr: scripted.ErrInconsistent,
			naming:  "step 1 attempt 1: seq 2 missing",
		},
		{
			name:    "first frame missing",
			rec:     withoutFrame(attempt(1, 1, targetA, ok, "", "a", "[DONE]"), 0),
			wantErr: scripted.ErrInconsistent,
			naming:  "seq 1 missing",
		},
		{
			name:    "duplicate sequence",
			rec:     dupFrame(attempt(1, 1, targetA, ok, "", "a", "b", "[DONE]"), 1),
			wantErr: scripted.ErrInconsistent,
			naming:  "seq 2 recorded twice",
		},
		{
			name:    "duplicate marker",
			rec:     dupChunk(attempt(1, 1, targetA, ok, "", "a", "[DONE]"), 2),
			wantErr: scripted.ErrInconsistent,
			naming:  "step 1 attempt 1: end marker recorded twice",
		},
		{
			name:    "duplicate chunk of a frame",
			rec:     dupChunk(attempt(1, 1, targetA, ok, "", "a", "[DONE]"), 0),
			wantErr: scripted.ErrInconsistent,
			naming:  "step 1 attempt 1: the chunk at seq 1 recorded twice",
		},
		{
			name:    "sequence out of range",
			rec:     withFrameSeq(attempt(1, 1, targetA, ok, "", "a"), 0, 0),
			wantErr: scripted.ErrInconsistent,
		},
		{
			name:    "the last frame lost under its chunk",
			rec:     withoutFrame(attempt(1, 1, targetA, ok, "", "a", "b", "[DONE]"), 2),
			wantErr: scripted.ErrInconsistent,
			naming:  "step 1 attempt 1: the chunk at seq 3 has no raw frame",
		},
		{
			name:    "chunks without raw frames (recorded before TURN_RAW)",
			rec:     recording{chunks: attempt(1, 1, targetA, ok, "", "a", "[DONE]").chunks},
			wantErr: scripted.ErrInconsistent,
			naming:  "step 1 attempt 1: the chunk at seq 1 has no raw frame",
		},
		{
			name: "frames without their chunks keep their bytes",
			rec:  markersOnly(attempt(1, 1, targetA, ok, "", "a", "[DONE]")),
			want: []string{"1/1 primary/m-a [a [DONE]] complete completed"},
		},
		{
			name:    "end marker skips a sequence number",
			rec:     withChunkSeq(attempt(1, 1, targetA, ok, "", "a"), 1, 3),
			wantErr: scripted.ErrInconsistent,
			naming:  "step 1 attempt 1: seq 2 missing",
		},
		{
			name:    "end marker alone not first",
			rec:     withChunkSeq(attempt(1, 1, targetA, retr, provider.ClassServer), 0, 2),
			wantErr: scripted.ErrInconsistent,
			naming:  "step 1 attempt 1: seq 1 missing",
		},
		{
			name: "attempt missing in a step",
			rec: concat(
				attempt(1, 1, targetA, retr, provider.ClassServer),
				attempt(1, 3, targetA, ok, "", "x", "[DONE]"),
			),
			wantErr: scripted.ErrInconsistent,
			naming:  "step 1: attempt 2 missing",
		},
		{
			name:    "first attempt missing",
			rec:     attempt(2, 2, targetA, ok, "", "x", "[DONE]"),
			wantErr: scripted.ErrInconsistent,
			naming:  "step 2: attempt 1 missing",
		},
		{
			name:    "frames after the end marker",
			rec:     withMarker(attempt(1, 1, targetA, "", "", "a", "b"), 1, wire.MarkerCompleted),
			wantErr: scripted.ErrInconsistent,
			naming:  "after the end marker",
		},
		{
			name:    "unknown marker",
			rec:     attempt(1, 1, targetA, "aborted", provider.ClassServer),
			wantErr: scripted.ErrInconsistent,
		},
		{
			name:    "retrying marker without class",
			rec:     attempt(1, 1, targetA, retr, ""),
			wantErr: scripted.ErrInconsistent,
		},
		{
			name:    "completed marker with a class",
			rec:     attempt(1, 1, targetA, ok, provider.ClassServer, "[DONE]"),
			wantErr: scripted.ErrInconsistent,
		},
		{
			name:    "two targets in one attempt",
			rec:     withFrameTarget(attempt(1, 1, targetA, ok, "", "a", "[DONE]"), 1, targetB),
			wantErr: scripted.ErrInconsistent,
			naming:  "more than one target",
		},
		{
			name:    "a chunk of another target than its frame",
			rec:     withChunkTarget(attempt(1, 1, targetA, ok, "", "a", "[DONE]"), 0, targetB),
			wantErr: scripted.ErrInconsistent,
			naming:  "more than one target",
		},
		{
			name:    "an end marker of another target than the frames",
			rec:     withChunkTarget(attempt(1, 1, targetA, ok, "", "a", "[DONE]"), 2, targetB),
			wantErr: scripted.ErrInconsistent,
			naming:  "another target",
		},
		{
			name:    "a chunk naming another event than its frame",
			rec:     withChunkEvent(attempt(1, 1, targetA, ok, "", "a", "[DONE]"), 1, "message"),
			wantErr: scripted.ErrInconsistent,
			naming:  "the chunk at seq 2 names another event",
		},
		{
			name: "records of two turns",
			rec: concat(
				attempt(1, 1, targetA, ok, "", "a", "[DONE]"),
				withTurn(attempt(2, 1, targetA, ok, "", "b", "[DONE]"), "t2"),
			),
			wantErr: scripted.ErrInconsistent,
		},
		{
			name:    "raw frames of another turn than the chunks",
			rec:     withFrameTurn(attempt(1, 1, targetA, ok, "", "a", "[DONE]"), "t2"),
			wantErr: scripted.ErrInconsistent,
		},
		{
			name:    "a record without a turn among the turn's",
			rec:     concat(attempt(1, 1, targetA, ok, "", "a", "[DONE]"), withTurn(attempt(2, 1, targetA, ok, "", "b"), "")),
			wantErr: scripted.ErrInconsistent,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.rec.clone()
			s, err := scripted.Derive(tt.rec.frames, tt.rec.chunks, tt.overrides...)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Derive() error = %v; want %v", err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.naming) {
					t.Errorf("Derive() error = %q; want it to name %q", err, tt.naming)
				}
				return
			}
			if err != nil {
				t.Fatalf("Derive() error = %v; want nil", err)
			}
			if got := summary(s); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Derive() =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if !reflect.DeepEqual(tt.rec, in) {
				t.Errorf("Derive() modified its input")
			}
		})
	}
}

// TestDeriveKeepsRecordedDeltas: a frame's bytes and event come from its
// raw frame, its delta from its chunk; the bytes are copied.
func TestDeriveKeepsRecordedDeltas(t *testing.T) {
	rec := attempt(1, 1, targetA, wire.MarkerCompleted, "", "a", "[DONE]")
	rec.setEvent(0, "message")
	rec.chunks[0].Delta = &wire.Delta{Text: "hi"}
	s := derive(t, rec)
	f := s.Calls[0].Frames[0]
	if f.Event != "message" || f.Delta == nil || f.Delta.Text != "hi" || string(f.Raw) != "a" {
		t.Errorf("Derive() frame = %+v; want raw a, event message, delta text hi", f)
	}
	if f := s.Calls[0].Frames[1]; f.Delta != nil || string(f.Raw) != "[DONE]" {
		t.Errorf("Derive() frame = %+v; want raw [DONE] and no delta (its chunk had none)", f)
	}
	rec.frames[0].Bytes[0] = 'X'
	if got := string(s.Calls[0].Frames[0].Raw); got != "a" {
		t.Errorf("Derive() frame raw = %q after the input changed; want %q (a copy)", got, "a")
	}
}

func TestScriptStepsAndChain(t *testing.T) {
	s := derive(t, concat(
		attempt(1, 1, targetA, wire.MarkerRetrying, provider.ClassServer),
		attempt(1, 2, targetA, wire.MarkerFailed, provider.ClassServer),
		attempt(1, 3, targetB, wire.MarkerCompleted, "", "[DONE]"),
		attempt(3, 1, targetB, wire.MarkerCompleted, "", "[DONE]"),
	))
	if got, want := s.Steps(), []int{1, 3}; !reflect.DeepEqual(got, want) {
		t.Errorf("Steps() = %v; want %v", got, want)
	}
	for _, tt := range []struct {
		step int
		want []provider.Target
	}{
		{1, []provider.Target{targetA, targetB}},
		{2, nil},
		{3, []provider.Target{targetB}},
	} {
		if got := s.Chain(tt.step); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Chain(%d) = %v; want %v", tt.step, got, tt.want)
		}
	}
}

func reversed(r recording) recording {
	out := r.clone()
	slices.Reverse(out.frames)
	slices.Reverse(out.chunks)
	return out
}

func withoutFrame(r recording, i int) recording {
	out := r.clone()
	out.frames = slices.Delete(out.frames, i, i+1)
	return out
}

func dupFrame(r recording, i int) recording {
	out := r.clone()
	out.frames = slices.Insert(out.frames, i, out.frames[i])
	return out
}

func dupChunk(r recording, i int) recording {
	out := r.clone()
	out.chunks = slices.Insert(out.chunks, i, out.chunks[i])
	return out
}

// markersOnly drops the chunks of frames, keeping the end markers.
func markersOnly(r recording) recording {
	out := r.clone()
	out.chunks = slices.DeleteFunc(out.chunks, func(c wire.Chunk) bool { return c.Marker == "" })
	return out
}

func withFrameSeq(r recording, i, seq int) recording {
	out := r.clone()
	out.frames[i].Seq = seq
	return out
}

func withChunkSeq(r recording, i, seq int) recording {
	out := r.clone()
	out.chunks[i].Seq = seq
	return out
}

// withMarker adds an end marker chunk at seq.
func withMarker(r recording, seq int, marker string) recording {
	out := r.clone()
	f := out.frames[0]
	out.chunks = append(out.chunks, wire.Chunk{SessionID: f.SessionID, TurnID: f.TurnID, Step: f.Step, Attempt: f.Attempt, Seq: seq,
		Provider: f.Provider, Model: f.Model, Marker: marker})
	return out
}

func withFrameTarget(r recording, i int, target provider.Target) recording {
	out := r.clone()
	out.frames[i].Provider, out.frames[i].Model = target.Provider, target.Model
	return out
}

func withChunkTarget(r recording, i int, target provider.Target) recording {
	out := r.clone()
	out.chunks[i].Provider, out.chunks[i].Model = target.Provider, target.Model
	return out
}

func withChunkEvent(r recording, i int, event string) recording {
	out := r.clone()
	out.chunks[i].Event = event
	return out
}

func withTurn(r recording, turn string) recording {
	out := withFrameTurn(r, turn)
	for i := range out.chunks {
		out.chunks[i].TurnID = turn
	}
	return out
}

func withFrameTurn(r recording, turn string) recording {
	out := r.clone()
	for i := range out.frames {
		out.frames[i].TurnID = turn
	}
	return out
}

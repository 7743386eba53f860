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
		chunks    []wire.Chunk
		overrides []scripted.Override
		want      []string
		wantErr   error
		// naming must appear in the error.
		naming string
	}{
		{
			name:   "empty log",
			chunks: nil,
			want:   nil,
		},
		{
			name:   "single completed attempt",
			chunks: attempt(1, 1, targetA, ok, "", "a", "b", "[DONE]"),
			want:   []string{"1/1 primary/m-a [a b [DONE]] complete completed"},
		},
		{
			name: "retry then success in one step",
			chunks: concat(
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
			chunks: concat(
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
			chunks: concat(
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
			chunks: concat(
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
			chunks: reversed(concat(
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
			chunks: concat(
				attempt(1, 1, targetA, ok, "", "t", "[DONE]"),
				attempt(2, 1, targetA, "", "", "half"),
			),
			wantErr: scripted.ErrNoMarker,
			naming:  "step 2 attempt 1",
		},
		{
			name: "missing marker of a retry",
			chunks: concat(
				attempt(3, 1, targetA, retr, provider.ClassServer),
				attempt(3, 2, targetA, "", "", "half", "more"),
			),
			wantErr: scripted.ErrNoMarker,
			naming:  "step 3 attempt 2",
		},
		{
			name: "thrown stream supplied by an override",
			chunks: concat(
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
			chunks:    attempt(1, 1, targetB, "", "", "half"),
			overrides: []scripted.Override{{Step: 1, Attempt: 1, Outcome: scripted.Hang()}},
			want:      []string{"1/1 backup/m-b [half] hang "},
		},
		{
			name:      "completion supplied by an override (crash after the terminal frame)",
			chunks:    attempt(1, 1, targetA, "", "", "x", "[DONE]"),
			overrides: []scripted.Override{{Step: 1, Attempt: 1, Outcome: scripted.Complete()}},
			want:      []string{"1/1 primary/m-a [x [DONE]] complete "},
		},
		{
			name:      "override contradicting a recorded marker",
			chunks:    attempt(1, 1, targetA, ok, "", "x", "[DONE]"),
			overrides: []scripted.Override{{Step: 1, Attempt: 1, Outcome: scripted.Hang()}},
			wantErr:   scripted.ErrOverride,
			naming:    "step 1 attempt 1",
		},
		{
			name:      "override of no attempt",
			chunks:    attempt(1, 1, targetA, ok, "", "x", "[DONE]"),
			overrides: []scripted.Override{{Step: 1, Attempt: 2, Outcome: scripted.Hang()}},
			wantErr:   scripted.ErrOverride,
			naming:    "step 1 attempt 2",
		},
		{
			name:      "override without outcome",
			chunks:    attempt(1, 1, targetA, "", "", "x"),
			overrides: []scripted.Override{{Step: 1, Attempt: 1}},
			wantErr:   scripted.ErrOverride,
		},
		{
			name:      "override failing without class",
			chunks:    attempt(1, 1, targetA, "", "", "x"),
			overrides: []scripted.Override{{Step: 1, Attempt: 1, Outcome: scripted.Outcome{Kind: scripted.KindFail}}},
			wantErr:   scripted.ErrOverride,
		},
		{
			name:   "override given twice",
			chunks: attempt(1, 1, targetA, "", "", "x"),
			overrides: []scripted.Override{
				{Step: 1, Attempt: 1, Outcome: scripted.Hang()},
				{Step: 1, Attempt: 1, Outcome: scripted.Hang()},
			},
			wantErr: scripted.ErrOverride,
		},
		{
			name:    "sequence gap",
			chunks:  without(attempt(1, 1, targetA, ok, "", "a", "b", "[DONE]"), 1),
			wantErr: scripted.ErrInconsistent,
			naming:  "step 1 attempt 1: seq 2 missing",
		},
		{
			name:    "first chunk missing",
			chunks:  without(attempt(1, 1, targetA, ok, "", "a", "[DONE]"), 0),
			wantErr: scripted.ErrInconsistent,
			naming:  "seq 1 missing",
		},
		{
			name:    "duplicate sequence",
			chunks:  dup(attempt(1, 1, targetA, ok, "", "a", "b", "[DONE]"), 1),
			wantErr: scripted.ErrInconsistent,
			naming:  "seq 2 recorded twice",
		},
		{
			name:    "duplicate marker",
			chunks:  dup(attempt(1, 1, targetA, ok, "", "a", "[DONE]"), 2),
			wantErr: scripted.ErrInconsistent,
			naming:  "step 1 attempt 1",
		},
		{
			name:    "sequence out of range",
			chunks:  withSeq(attempt(1, 1, targetA, ok, "", "a"), 0, 0),
			wantErr: scripted.ErrInconsistent,
		},
		{
			name: "attempt missing in a step",
			chunks: concat(
				attempt(1, 1, targetA, retr, provider.ClassServer),
				attempt(1, 3, targetA, ok, "", "x", "[DONE]"),
			),
			wantErr: scripted.ErrInconsistent,
			naming:  "step 1: attempt 2 missing",
		},
		{
			name:    "first attempt missing",
			chunks:  attempt(2, 2, targetA, ok, "", "x", "[DONE]"),
			wantErr: scripted.ErrInconsistent,
			naming:  "step 2: attempt 1 missing",
		},
		{
			name:    "frames after the end marker",
			chunks:  withMarkerAt(attempt(1, 1, targetA, "", "", "a", "b"), 0, wire.MarkerCompleted),
			wantErr: scripted.ErrInconsistent,
			naming:  "after the end marker",
		},
		{
			name:    "unknown marker",
			chunks:  attempt(1, 1, targetA, "aborted", provider.ClassServer),
			wantErr: scripted.ErrInconsistent,
		},
		{
			name:    "retrying marker without class",
			chunks:  attempt(1, 1, targetA, retr, ""),
			wantErr: scripted.ErrInconsistent,
		},
		{
			name:    "completed marker with a class",
			chunks:  attempt(1, 1, targetA, ok, provider.ClassServer, "[DONE]"),
			wantErr: scripted.ErrInconsistent,
		},
		{
			name:    "two targets in one attempt",
			chunks:  withTarget(attempt(1, 1, targetA, ok, "", "a", "[DONE]"), 2, targetB),
			wantErr: scripted.ErrInconsistent,
		},
		{
			name: "chunks of two turns",
			chunks: concat(
				attempt(1, 1, targetA, ok, "", "a", "[DONE]"),
				withTurn(attempt(2, 1, targetA, ok, "", "b", "[DONE]"), "t2"),
			),
			wantErr: scripted.ErrInconsistent,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.chunks)
			s, err := scripted.Derive(tt.chunks, tt.overrides...)
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
			if !reflect.DeepEqual(tt.chunks, in) {
				t.Errorf("Derive() modified its input")
			}
		})
	}
}

func TestDeriveKeepsRecordedDeltas(t *testing.T) {
	chunks := attempt(1, 1, targetA, wire.MarkerCompleted, "", "a", "[DONE]")
	chunks[0].Event = "message"
	chunks[0].Delta = &wire.Delta{Text: "hi"}
	s := derive(t, chunks)
	f := s.Calls[0].Frames[0]
	if f.Event != "message" || f.Delta == nil || f.Delta.Text != "hi" {
		t.Errorf("Derive() frame = %+v; want event message, delta text hi", f)
	}
	chunks[0].Raw[0] = 'X'
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

func reversed(cs []wire.Chunk) []wire.Chunk {
	out := slices.Clone(cs)
	slices.Reverse(out)
	return out
}

func without(cs []wire.Chunk, i int) []wire.Chunk {
	return slices.Delete(slices.Clone(cs), i, i+1)
}

func dup(cs []wire.Chunk, i int) []wire.Chunk {
	return slices.Insert(slices.Clone(cs), i, cs[i])
}

func withSeq(cs []wire.Chunk, i, seq int) []wire.Chunk {
	out := slices.Clone(cs)
	out[i].Seq = seq
	return out
}

func withMarkerAt(cs []wire.Chunk, i int, marker string) []wire.Chunk {
	out := slices.Clone(cs)
	out[i].Marker = marker
	return out
}

func withTarget(cs []wire.Chunk, i int, target provider.Target) []wire.Chunk {
	out := slices.Clone(cs)
	out[i].Provider, out[i].Model = target.Provider, target.Model
	return out
}

func withTurn(cs []wire.Chunk, turn string) []wire.Chunk {
	out := slices.Clone(cs)
	for i := range out {
		out[i].TurnID = turn
	}
	return out
}

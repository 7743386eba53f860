package scripted

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/pkg/wire"
)

// key locates one attempt in a turn.
type key struct{ step, attempt int }

// attemptLog is what a turn's record holds of one attempt: its raw frames
// and its chunks.
type attemptLog struct {
	frames []*wire.RawFrame
	chunks []*wire.Chunk
}

// Derive turns one turn's record (LLM-REPLAY-DERIVATION) into a script of
// one call per attempt: frames are the turn's raw frames (TURN_RAW), chunks
// its chunks (TURN_CHUNKS), both as Load returns them, in any order. Each
// attempt's raw frames, in sequence order, are its call's frames (bytes,
// event and target as the provider sent them); its end marker chunk
// decides the outcome: completed completes, retrying and failed fail with
// the recorded class. A frame's chunk, when there is one, gives the frame
// the normalized delta the recording worker computed. Retries and
// fallbacks of one step become separate calls.
//
// The record must be whole and agree with itself: within a step, attempts
// run from 1 without a gap; within an attempt, the raw frames' sequence
// numbers run from 1 without a gap or a duplicate, every frame has one
// target, the end marker (at most one) has the sequence number after the
// last frame's and the same target, and every other chunk is the chunk of
// a frame (its sequence number, target and event). An attempt without an
// end marker is an error naming its step and attempt unless an Override
// supplies its outcome. Neither slice is modified.
func Derive(frames []wire.RawFrame, chunks []wire.Chunk, overrides ...Override) (*Script, error) {
	over := make(map[key]Outcome, len(overrides))
	for _, o := range overrides {
		k := key{o.Step, o.Attempt}
		if err := o.Outcome.validate(); err != nil {
			return nil, fmt.Errorf("%w: step %d attempt %d: %v", ErrOverride, o.Step, o.Attempt, err)
		}
		if _, dup := over[k]; dup {
			return nil, fmt.Errorf("%w: step %d attempt %d: given twice", ErrOverride, o.Step, o.Attempt)
		}
		over[k] = o.Outcome
	}

	groups := map[key]*attemptLog{}
	group := func(k key) *attemptLog {
		g := groups[k]
		if g == nil {
			g = &attemptLog{}
			groups[k] = g
		}
		return g
	}
	var (
		session, turn string
		first         = true
	)
	sameTurn := func(s, t string) bool {
		if first {
			session, turn, first = s, t, false
		}
		return s == session && t == turn
	}
	for i := range frames {
		f := &frames[i]
		if !sameTurn(f.SessionID, f.TurnID) {
			return nil, fmt.Errorf("%w: records of more than one turn", ErrInconsistent)
		}
		g := group(key{f.Step, f.Attempt})
		g.frames = append(g.frames, f)
	}
	for i := range chunks {
		c := &chunks[i]
		if !sameTurn(c.SessionID, c.TurnID) {
			return nil, fmt.Errorf("%w: records of more than one turn", ErrInconsistent)
		}
		g := group(key{c.Step, c.Attempt})
		g.chunks = append(g.chunks, c)
	}
	keys := make([]key, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.step, b.step), cmp.Compare(a.attempt, b.attempt))
	})

	s := &Script{Calls: make([]Call, 0, len(keys))}
	for i, k := range keys {
		want := 1
		if i > 0 && keys[i-1].step == k.step {
			want = keys[i-1].attempt + 1
		}
		if k.attempt != want {
			return nil, fmt.Errorf("%w: step %d: attempt %d missing (next recorded is %d)", ErrInconsistent, k.step, want, k.attempt)
		}
		c, err := derive(k, groups[k])
		if err != nil {
			return nil, err
		}
		o, overridden := over[k]
		delete(over, k)
		switch {
		case c.Marker != "" && overridden:
			return nil, fmt.Errorf("%w: step %d attempt %d: has a recorded %s marker", ErrOverride, k.step, k.attempt, c.Marker)
		case c.Marker == "" && !overridden:
			return nil, fmt.Errorf("%w: step %d attempt %d", ErrNoMarker, k.step, k.attempt)
		case overridden:
			c.Outcome = o
		}
		s.Calls = append(s.Calls, c)
	}
	for _, o := range overrides {
		if _, unused := over[key{o.Step, o.Attempt}]; unused {
			return nil, fmt.Errorf("%w: step %d attempt %d: no such attempt in the record", ErrOverride, o.Step, o.Attempt)
		}
	}
	return s, nil
}

// derive builds the call of one attempt's record. Without an end marker
// the outcome is left zero for an Override to fill.
func derive(k key, g *attemptLog) (Call, error) {
	bad := func(format string, args ...any) (Call, error) {
		return Call{}, fmt.Errorf("%w: step %d attempt %d: %s", ErrInconsistent, k.step, k.attempt, fmt.Sprintf(format, args...))
	}
	frames := slices.Clone(g.frames)
	slices.SortStableFunc(frames, func(a, b *wire.RawFrame) int { return cmp.Compare(a.Seq, b.Seq) })
	c := Call{Step: k.step, Attempt: k.attempt}
	for i, f := range frames {
		target := provider.Target{Provider: f.Provider, Model: f.Model}
		switch {
		case i > 0 && f.Seq == frames[i-1].Seq:
			return bad("seq %d recorded twice", f.Seq)
		case f.Seq < 1:
			return bad("seq %d out of range", f.Seq)
		case f.Seq != i+1:
			return bad("seq %d missing", i+1)
		case i > 0 && target != c.Target:
			return bad("frames of more than one target")
		}
		c.Target = target
		c.Frames = append(c.Frames, provider.Frame{Raw: bytes.Clone(f.Bytes), Event: f.Event})
	}

	var end *wire.Chunk
	seen := make(map[int]bool, len(g.chunks))
	for _, ch := range g.chunks {
		target := provider.Target{Provider: ch.Provider, Model: ch.Model}
		if ch.Marker != "" {
			if end != nil {
				return bad("end marker recorded twice")
			}
			end = ch
			continue
		}
		switch {
		case ch.Seq < 1 || ch.Seq > len(frames):
			return bad("the chunk at seq %d has no raw frame", ch.Seq)
		case seen[ch.Seq]:
			return bad("the chunk at seq %d recorded twice", ch.Seq)
		case target != c.Target:
			return bad("chunks of more than one target")
		case ch.Event != frames[ch.Seq-1].Event:
			return bad("the chunk at seq %d names another event than its raw frame", ch.Seq)
		}
		seen[ch.Seq] = true
		c.Frames[ch.Seq-1].Delta = ch.Delta
	}
	if end == nil {
		return c, nil // frames without an end marker: an Override's to end
	}
	switch target := (provider.Target{Provider: end.Provider, Model: end.Model}); {
	case end.Seq <= len(frames):
		return bad("frames after the end marker")
	case end.Seq != len(frames)+1:
		return bad("seq %d missing", len(frames)+1)
	case len(frames) > 0 && target != c.Target:
		return bad("an end marker of another target than its frames")
	default:
		c.Target = target
	}
	o, err := outcomeOf(end)
	if err != nil {
		return bad("%v", err)
	}
	c.Marker, c.Outcome = end.Marker, o
	return c, nil
}

// outcomeOf reads an end marker.
func outcomeOf(ch *wire.Chunk) (Outcome, error) {
	switch ch.Marker {
	case wire.MarkerCompleted:
		if ch.Failure != "" {
			return Outcome{}, fmt.Errorf("completed marker with a failure class")
		}
		return Complete(), nil
	case wire.MarkerRetrying, wire.MarkerFailed:
		if ch.Failure == "" {
			return Outcome{}, fmt.Errorf("%s marker without a failure class", ch.Marker)
		}
		o := Fail(provider.Class(ch.Failure))
		o.Status, o.RetryAfter, o.RequestID = ch.HTTPStatus, time.Duration(ch.ProviderDelayMS)*time.Millisecond, ch.RequestID
		return o, nil
	}
	return Outcome{}, fmt.Errorf("unknown marker %q", ch.Marker)
}

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

// Derive turns one turn's chunk log into a script of one call per attempt
// (LLM-REPLAY-DERIVATION): chunks are grouped by step and attempt, each
// group's frames kept in sequence order, and its end marker decides the
// outcome: completed completes, retrying and failed fail with the recorded
// class. Retries and fallbacks of one step become separate calls.
//
// The log must be whole: within a step, attempts run from 1 without a gap;
// within an attempt, sequence numbers run from 1 without a gap or a
// duplicate, and only the last chunk is the end marker. An attempt without
// an end marker is an error naming its step and attempt unless an Override
// supplies its outcome. chunks is not modified.
func Derive(chunks []wire.Chunk, overrides ...Override) (*Script, error) {
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

	groups := map[key][]*wire.Chunk{}
	for i := range chunks {
		c := &chunks[i]
		if c.SessionID != chunks[0].SessionID || c.TurnID != chunks[0].TurnID {
			return nil, fmt.Errorf("%w: chunks of more than one turn", ErrInconsistent)
		}
		k := key{c.Step, c.Attempt}
		groups[k] = append(groups[k], c)
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
			return nil, fmt.Errorf("%w: step %d attempt %d: no such attempt in the log", ErrOverride, o.Step, o.Attempt)
		}
	}
	return s, nil
}

// derive builds the call of one attempt's chunks. Without an end marker the
// outcome is left zero for an Override to fill.
func derive(k key, group []*wire.Chunk) (Call, error) {
	slices.SortStableFunc(group, func(a, b *wire.Chunk) int { return cmp.Compare(a.Seq, b.Seq) })
	first := group[0]
	c := Call{Step: k.step, Attempt: k.attempt, Target: provider.Target{Provider: first.Provider, Model: first.Model}}
	for i, ch := range group {
		switch {
		case i > 0 && ch.Seq == group[i-1].Seq:
			return Call{}, fmt.Errorf("%w: step %d attempt %d: seq %d recorded twice", ErrInconsistent, k.step, k.attempt, ch.Seq)
		case ch.Seq < 1:
			return Call{}, fmt.Errorf("%w: step %d attempt %d: seq %d out of range", ErrInconsistent, k.step, k.attempt, ch.Seq)
		case ch.Seq != i+1:
			return Call{}, fmt.Errorf("%w: step %d attempt %d: seq %d missing", ErrInconsistent, k.step, k.attempt, i+1)
		case ch.Provider != c.Target.Provider || ch.Model != c.Target.Model:
			return Call{}, fmt.Errorf("%w: step %d attempt %d: chunks of more than one target", ErrInconsistent, k.step, k.attempt)
		}
		if ch.Marker == "" {
			c.Frames = append(c.Frames, provider.Frame{Raw: bytes.Clone(ch.Raw), Event: ch.Event, Delta: ch.Delta})
			continue
		}
		if i != len(group)-1 {
			return Call{}, fmt.Errorf("%w: step %d attempt %d: chunks after the end marker", ErrInconsistent, k.step, k.attempt)
		}
		o, err := outcomeOf(ch)
		if err != nil {
			return Call{}, fmt.Errorf("%w: step %d attempt %d: %v", ErrInconsistent, k.step, k.attempt, err)
		}
		c.Marker, c.Outcome = ch.Marker, o
	}
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

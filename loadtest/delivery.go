package main

import (
	"fmt"
	"slices"

	"github.com/turnstream/turnstream/pkg/wire"
)

// What a follower received of one turn, for the delivery check.
type (
	// turnRecords are a turn's chunks and events as received, in order.
	turnRecords struct {
		Name   string
		Chunks []chunkRecord
		Events []eventRecord
		// Err is the follower's failure (a timeout, a failed submit), if
		// any.
		Err error
		// ChunksOnly checks the chunks alone: the raw-NATS baseline has
		// no events.
		ChunksOnly bool
	}
	chunkRecord struct {
		Step, Attempt, Seq int
		Marker             string
	}
	eventRecord struct {
		Type     string
		Terminal bool // wire.SessionEvent.Terminal
		// Delivery and Resumed are a turn.accepted event's.
		Delivery int
		Resumed  bool
	}
)

func chunkOf(c *wire.Chunk) chunkRecord {
	return chunkRecord{Step: c.Step, Attempt: c.Attempt, Seq: c.Seq, Marker: c.Marker}
}

func eventOf(ev *wire.SessionEvent) eventRecord {
	r := eventRecord{Type: ev.Type, Terminal: ev.Terminal()}
	if a, err := wire.DecodePayload[wire.TurnAccepted](*ev); err == nil {
		r.Delivery, r.Resumed = a.Delivery, a.Resumed
	}
	return r
}

// DeliveryCheck counts what the followers of a set of turns received that
// breaks the delivery promise. A turn is complete when it has none of
// these: every attempt's chunks numbered 1..n without a gap or a
// duplicate and ended by one marker (the last), exactly one terminal
// event, turn.completed, and exactly one turn.accepted, of the first
// delivery and not resumed, with every chunk of attempt 1 (the mock never
// fails, so any other attempt is a re-run).
type DeliveryCheck struct {
	Turns    int `json:"turns"`
	Complete int `json:"complete"`
	// LostMarkers counts attempts whose end marker is missing (or not
	// last).
	LostMarkers int `json:"lost_markers"`
	// Gaps counts attempts whose chunks skip or repeat a sequence number.
	Gaps int `json:"gaps"`
	// Terminals counts turns without exactly one terminal event.
	Terminals int `json:"terminals"`
	// Reruns counts turns run more than once: a turn.accepted of a later
	// delivery or resumed, more than one, or an attempt after the first.
	Reruns int `json:"reruns"`
	// NotCompleted counts turns whose terminal event is not
	// turn.completed, or whose follower failed.
	NotCompleted int `json:"not_completed"`
	// LostEvents counts turns that ended without their turn.accepted
	// event.
	LostEvents int `json:"lost_events"`
	// Problems are the first few, for the report.
	Problems []string `json:"problems,omitempty"`
}

// maxProblems bounds DeliveryCheck.Problems.
const maxProblems = 10

// Exact reports whether every turn was delivered completely.
func (d DeliveryCheck) Exact() bool { return d.Complete == d.Turns }

// add checks one turn.
func (d *DeliveryCheck) add(r turnRecords) {
	d.Turns++
	problems := checkTurn(r)
	if len(problems) == 0 {
		d.Complete++
		return
	}
	for _, p := range problems {
		switch p.kind {
		case problemMarker:
			d.LostMarkers++
		case problemGap:
			d.Gaps++
		case problemTerminal:
			d.Terminals++
		case problemRerun:
			d.Reruns++
		case problemNotCompleted:
			d.NotCompleted++
		case problemEvents:
			d.LostEvents++
		}
		if len(d.Problems) < maxProblems {
			d.Problems = append(d.Problems, r.Name+": "+p.detail)
		}
	}
}

// merge adds another check's counts.
func (d *DeliveryCheck) merge(o DeliveryCheck) {
	d.Turns += o.Turns
	d.Complete += o.Complete
	d.LostMarkers += o.LostMarkers
	d.Gaps += o.Gaps
	d.Terminals += o.Terminals
	d.Reruns += o.Reruns
	d.NotCompleted += o.NotCompleted
	d.LostEvents += o.LostEvents
	for _, p := range o.Problems {
		if len(d.Problems) < maxProblems {
			d.Problems = append(d.Problems, p)
		}
	}
}

type problemKind int

const (
	problemMarker problemKind = iota
	problemGap
	problemTerminal
	problemRerun
	problemNotCompleted
	problemEvents
)

type problem struct {
	kind   problemKind
	detail string
}

// checkTurn lists what is wrong with one turn's records; none for a turn
// delivered completely. Each kind is reported at most once per attempt
// (markers, gaps) or per turn (the rest).
func checkTurn(r turnRecords) []problem {
	var ps []problem
	add := func(k problemKind, format string, args ...any) {
		ps = append(ps, problem{kind: k, detail: fmt.Sprintf(format, args...)})
	}
	if r.Err != nil {
		add(problemNotCompleted, "follower failed: %v", r.Err)
	}

	type attemptKey struct{ step, attempt int }
	attempts := map[attemptKey][]chunkRecord{}
	var order []attemptKey
	rerun := false
	for _, c := range r.Chunks {
		k := attemptKey{c.Step, c.Attempt}
		if _, ok := attempts[k]; !ok {
			order = append(order, k)
		}
		attempts[k] = append(attempts[k], c)
		if c.Attempt != 1 {
			rerun = true
		}
	}
	for _, k := range order {
		cs := attempts[k]
		seqs := make([]int, len(cs))
		reordered := false
		for i, c := range cs {
			seqs[i] = c.Seq
			if i > 0 && c.Seq <= cs[i-1].Seq && !reordered {
				reordered = true
				add(problemGap, "step %d attempt %d: chunk seq %d came after %d", k.step, k.attempt, c.Seq, cs[i-1].Seq)
			}
		}
		slices.Sort(seqs)
		for i, s := range seqs {
			if s != i+1 {
				add(problemGap, "step %d attempt %d: chunk seqs %s; want 1..%d", k.step, k.attempt, seqRange(seqs), len(seqs))
				break
			}
		}
		markers, last := 0, cs[0]
		for _, c := range cs {
			if c.Marker != "" {
				markers++
			}
			if c.Seq > last.Seq {
				last = c
			}
		}
		if markers != 1 || last.Marker == "" {
			add(problemMarker, "step %d attempt %d: %d markers, last chunk (seq %d) marker %q", k.step, k.attempt, markers, last.Seq, last.Marker)
		}
	}

	if r.ChunksOnly {
		if rerun {
			add(problemRerun, "re-run: (step attempt)s %v", order)
		}
		if len(r.Chunks) == 0 && r.Err == nil {
			add(problemMarker, "no chunk")
		}
		return ps
	}
	terminals, accepted := 0, 0
	completed := false
	for _, e := range r.Events {
		switch {
		case e.Terminal:
			terminals++
			completed = e.Type == wire.EventTurnCompleted
		case e.Type == wire.EventTurnAccepted:
			accepted++
			if e.Delivery != 1 || e.Resumed {
				rerun = true
			}
		}
	}
	if terminals != 1 {
		add(problemTerminal, "%d terminal events; want 1", terminals)
	}
	if accepted > 1 {
		rerun = true
	}
	if rerun {
		add(problemRerun, "re-run: %d turn.accepted events, (step attempt)s %v", accepted, order)
	}
	if r.Err == nil && terminals > 0 && !completed {
		add(problemNotCompleted, "the terminal event is not turn.completed")
	}
	if r.Err == nil && terminals > 0 && accepted == 0 {
		add(problemEvents, "no turn.accepted event")
	}
	return ps
}

func seqRange(seqs []int) string {
	if len(seqs) > 8 {
		return fmt.Sprintf("%v...%v (%d)", seqs[:4], seqs[len(seqs)-2:], len(seqs))
	}
	return fmt.Sprint(seqs)
}

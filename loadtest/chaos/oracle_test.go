package chaos

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/pkg/wire"
)

// submitted is a turn the scenario submitted, in submission order within
// its session.
type submitted struct {
	session, turn string
	index         int // position in its session's submission order
}

// figures are what the oracle counted.
type figures struct {
	Turns, Completed, Failed    int
	Messages, Chunks, Events    int
	ToolMessages, UnknownResult int
	Effects, IdemReruns         int
	// Reasons counts the failed turns' reasons.
	Reasons    map[string]int
	Violations []string
}

func (f *figures) violate(format string, args ...any) {
	f.Violations = append(f.Violations, fmt.Sprintf(format, args...))
}

func (f figures) String() string {
	s := fmt.Sprintf("%d turns (%d completed, %d failed), %d messages, %d chunks, %d events, %d tool results (%d outcome unknown), %d effects, %d idempotent re-runs, %d violations",
		f.Turns, f.Completed, f.Failed, f.Messages, f.Chunks, f.Events, f.ToolMessages, f.UnknownResult, f.Effects, f.IdemReruns, len(f.Violations))
	if len(f.Reasons) > 0 {
		s += fmt.Sprintf("; failures %v", f.Reasons)
	}
	return s
}

// ledgerEntry counts what the tools did for one call.
type ledgerEntry struct{ starts, effects int }

func readLedger(t *testing.T, path string) map[string]*ledgerEntry {
	t.Helper()
	out := map[string]*ledgerEntry{}
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return out
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "<start|effect> <kind> <session> <turn> <call> <pid>"
		fs := strings.Fields(sc.Text())
		if len(fs) != 6 {
			continue // a line a kill cut short
		}
		key := fs[1] + " " + fs[2] + " " + fs[3] + " " + fs[4]
		e := out[key]
		if e == nil {
			e = &ledgerEntry{}
			out[key] = e
		}
		if fs[0] == "start" {
			e.starts++
		} else {
			e.effects++
		}
	}
	return out
}

// check reads every session's log, events and chunks and the tools' ledger
// and reports what violates the promises.
func check(t *testing.T, js jetstream.JetStream, ledgerPath string, turns []submitted) figures {
	t.Helper()
	f := figures{Reasons: map[string]int{}}
	f.Turns = len(turns)
	ledger := readLedger(t, ledgerPath)
	subjects := wire.Subjects{}
	bySession := map[string][]submitted{}
	var order []string
	for _, s := range turns {
		if bySession[s.session] == nil {
			order = append(order, s.session)
		}
		bySession[s.session] = append(bySession[s.session], s)
	}
	for _, session := range order {
		subs := bySession[session]
		msgs := read[wire.Message](t, js, wire.StreamMessages, subjects.Message(session))
		evs := read[wire.SessionEvent](t, js, wire.StreamEvents, subjects.Event(session))
		f.Messages += len(msgs)
		f.Events += len(evs)

		// The log: positions 1..n, each once; turns in contiguous blocks
		// in submission order.
		index := map[string]int{}
		for _, s := range subs {
			index[s.turn] = s.index
		}
		last, lastIndex := "", -1
		done := map[string]bool{}
		assistant := map[string]bool{}
		toolMsg := map[string]bool{}
		for i, m := range msgs {
			if m.Seq != uint64(i+1) {
				f.violate("%s: log position %d holds seq %d (a gap or a duplicate)", session, i+1, m.Seq)
			}
			if m.TurnID != last {
				if done[m.TurnID] {
					f.violate("%s: turn %s interleaved with another", session, m.TurnID)
				}
				if index[m.TurnID] < lastIndex {
					f.violate("%s: turn %s ran before an earlier-submitted one", session, m.TurnID)
				}
				done[last] = true
				last, lastIndex = m.TurnID, index[m.TurnID]
			}
			switch m.Role {
			case wire.RoleAssistant:
				k := fmt.Sprintf("%s/%d/%v", m.TurnID, m.Step, m.Synthesized)
				if assistant[k] && !m.Synthesized {
					f.violate("%s: assistant message of %s step %d written twice", session, m.TurnID, m.Step)
				}
				assistant[k] = true
			case wire.RoleTool:
				f.ToolMessages++
				k := m.TurnID + "/" + m.ToolCallID
				if toolMsg[k] {
					f.violate("%s: result of %s written twice", session, k)
				}
				toolMsg[k] = true
				if m.IsError && strings.Contains(m.Content, "outcome unknown") {
					f.UnknownResult++
				}
			}
		}

		// Events: exactly one terminal event per turn.
		terminals := map[string]int{}
		status := map[string]string{}
		for _, ev := range evs {
			if ev.Type == wire.EventTurnCompleted || ev.Type == wire.EventTurnFailed {
				terminals[ev.TurnID]++
				status[ev.TurnID] = ev.Type
				if ev.Type == wire.EventTurnFailed {
					f.Reasons[fmt.Sprint(ev.Payload["reason"], "/", ev.Payload["class"])]++
				}
			}
		}
		for _, s := range subs {
			switch n := terminals[s.turn]; {
			case n != 1:
				f.violate("%s/%s: %d terminal events; want 1", session, s.turn, n)
			case status[s.turn] == wire.EventTurnCompleted:
				f.Completed++
			default:
				f.Failed++
			}
		}

		// Tools: no non-idempotent effect twice; every completed turn's
		// calls ran exactly once.
		for _, m := range msgs {
			if m.Role != wire.RoleAssistant {
				continue
			}
			for _, c := range m.ToolCalls {
				e := ledger[c.Name+" "+session+" "+m.TurnID+" "+c.ID]
				if e == nil {
					e = &ledgerEntry{}
				}
				f.Effects += e.effects
				if c.Name == toolEffect && (e.effects > 1 || e.starts > 1) {
					f.violate("%s/%s: non-idempotent call %s ran %d times (%d effects)", session, m.TurnID, c.ID, e.starts, e.effects)
				}
				if c.Name == toolIdem && e.starts > 1 {
					f.IdemReruns += e.starts - 1
				}
				if status[m.TurnID] == wire.EventTurnCompleted && toolMsg[m.TurnID+"/"+c.ID] && e.effects == 0 && !resultIsError(msgs, m.TurnID, c.ID) {
					f.violate("%s/%s: call %s answered without its effect", session, m.TurnID, c.ID)
				}
			}
		}

		// Chunks: at most one completed attempt per step, and one for
		// every step the provider answered.
		for _, s := range subs {
			chunks := read[wire.Chunk](t, js, wire.StreamChunks, subjects.Chunk(session, s.turn))
			f.Chunks += len(chunks)
			completed := map[int]map[int]bool{}
			for _, c := range chunks {
				if c.Marker == wire.MarkerCompleted {
					if completed[c.Step] == nil {
						completed[c.Step] = map[int]bool{}
					}
					completed[c.Step][c.Attempt] = true
				}
			}
			for step, attempts := range completed {
				if len(attempts) > 1 {
					f.violate("%s/%s: step %d has %d completed attempts", session, s.turn, step, len(attempts))
				}
			}
			for _, m := range msgs {
				if m.TurnID == s.turn && m.Role == wire.RoleAssistant && !m.Synthesized && len(completed[m.Step]) != 1 {
					f.violate("%s/%s: step %d's answer is on the log but %d attempts are marked completed", session, s.turn, m.Step, len(completed[m.Step]))
				}
			}
		}
	}
	return f
}

func resultIsError(msgs []wire.Message, turn, call string) bool {
	for _, m := range msgs {
		if m.Role == wire.RoleTool && m.TurnID == turn && m.ToolCallID == call {
			return m.IsError
		}
	}
	return false
}

// read returns every record stored on subject, in stream order.
func read[T any](t *testing.T, js jetstream.JetStream, stream, subject string) []T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatalf("stream %s: %v", stream, err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatalf("stream %s info: %v", stream, err)
	}
	want := info.State.Subjects[subject]
	var out []T
	if want == 0 {
		return out
	}
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		t.Fatal(err)
	}
	it, err := cons.Messages()
	if err != nil {
		t.Fatal(err)
	}
	defer it.Stop()
	for uint64(len(out)) < want {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			t.Fatalf("reading %s: %v", subject, err)
		}
		var v T
		if err := wire.Decode(m.Headers().Get(wire.HeaderContentType), m.Data(), &v); err != nil {
			t.Fatalf("decode a %s record: %v", subject, err)
		}
		out = append(out, v)
	}
	return out
}

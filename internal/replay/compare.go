package replay

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/turnstream/turnstream/pkg/wire"
)

// Divergence is one way the replayed turn differs from the recorded one.
type Divergence struct {
	// Where names the record: "message 3 (assistant, step 1)", "messages",
	// "events" or "provider calls".
	Where string
	// Field is what differs: a message field, "count" or "types".
	Field string
	// Recorded and Replayed are the two values, rendered.
	Recorded, Replayed string
}

func (d Divergence) String() string {
	return fmt.Sprintf("%s: %s: recorded %s, replayed %s", d.Where, d.Field, d.Recorded, d.Replayed)
}

// Compare lists how a replayed turn (its messages and events, in order)
// differs from the recorded one: message by message, each message's step,
// role, content, tool calls (id, name, arguments), the call it answers,
// its error, repair and truncation flags, finish reasons, target and
// usage; and the sequence of audit event types. Times, session-log
// positions and event payloads (durations, counts of the whole run) are
// not compared, nor content_redacted: a replayed tool answers with the
// content as stored, already redacted. Nil means the turns match.
func Compare(recorded, replayed []wire.Message, recordedEvents, replayedEvents []wire.SessionEvent) []Divergence {
	var out []Divergence
	if len(recorded) != len(replayed) {
		out = append(out, Divergence{Where: "messages", Field: "count", Recorded: strconv.Itoa(len(recorded)), Replayed: strconv.Itoa(len(replayed))})
	}
	for i := range min(len(recorded), len(replayed)) {
		a, b := &recorded[i], &replayed[i]
		where := fmt.Sprintf("message %d (%s, step %d)", i+1, a.Role, a.Step)
		for _, f := range messageFields {
			if x, y := f.get(a), f.get(b); x != y {
				out = append(out, Divergence{Where: where, Field: f.name, Recorded: x, Replayed: y})
			}
		}
	}
	if k, differ := firstDifference(recordedEvents, replayedEvents); differ {
		out = append(out, Divergence{Where: "events", Field: fmt.Sprintf("types from event %d", k+1),
			Recorded: eventTypes(recordedEvents[k:]), Replayed: eventTypes(replayedEvents[k:])})
	}
	return out
}

// firstDifference is the index of the first event whose type differs (or
// that one sequence lacks), and whether there is one.
func firstDifference(a, b []wire.SessionEvent) (int, bool) {
	for i := range min(len(a), len(b)) {
		if a[i].Type != b[i].Type {
			return i, true
		}
	}
	return min(len(a), len(b)), len(a) != len(b)
}

// messageFields are the compared fields of a message, each rendered.
var messageFields = []struct {
	name string
	get  func(*wire.Message) string
}{
	{"step", func(m *wire.Message) string { return strconv.Itoa(m.Step) }},
	{"role", func(m *wire.Message) string { return string(m.Role) }},
	{"content", func(m *wire.Message) string { return quote(m.Content) }},
	{"tool_calls", func(m *wire.Message) string { return calls(m.ToolCalls) }},
	{"tool_call_id", func(m *wire.Message) string { return quote(m.ToolCallID) }},
	{"is_error", func(m *wire.Message) string { return strconv.FormatBool(m.IsError) }},
	{"synthesized", func(m *wire.Message) string { return strconv.FormatBool(m.Synthesized) }},
	{"content_truncated", func(m *wire.Message) string { return strconv.FormatBool(m.ContentTruncated) }},
	{"finish_reason", func(m *wire.Message) string { return quote(m.FinishReason) }},
	{"raw_finish_reason", func(m *wire.Message) string { return quote(m.RawFinishReason) }},
	{"target", func(m *wire.Message) string { return m.Provider + "/" + m.Model }},
	{"usage", func(m *wire.Message) string {
		if m.Usage == nil {
			return "none"
		}
		return fmt.Sprintf("%+v", *m.Usage)
	}},
}

// calls renders tool calls as id name(arguments), in order.
func calls(cs []wire.Call) string {
	if len(cs) == 0 {
		return "none"
	}
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%s %s(%s)", c.ID, c.Name, clip(c.Arguments))
		if c.ArgumentsRedacted {
			parts[i] += " redacted"
		}
	}
	return strings.Join(parts, ", ")
}

// maxTypesShown bounds the event types shown in a divergence.
const maxTypesShown = 8

// eventTypes renders a sequence of event types.
func eventTypes(evs []wire.SessionEvent) string {
	var types []string
	for i, ev := range evs {
		if i == maxTypesShown {
			types = append(types, fmt.Sprintf("… %d more", len(evs)-i))
			break
		}
		types = append(types, ev.Type)
	}
	return "[" + strings.Join(types, " ") + "]"
}

// maxShown bounds a value shown in a divergence.
const maxShown = 160

func quote(s string) string { return strconv.Quote(clip(s)) }

func clip(s string) string {
	if r := []rune(s); len(r) > maxShown {
		return string(r[:maxShown]) + "…"
	}
	return s
}

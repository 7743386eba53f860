package console

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TurnPrinter prints one turn's updates as they arrive.
type TurnPrinter struct {
	w     io.Writer
	names map[string]string // call id → tool name
	// midLine is true while streamed text has not ended with a newline.
	midLine bool
	// open is the attempt whose chunks were printed last and which has
	// not ended with a marker, and seq its last chunk's sequence.
	open    *[2]int
	openSeq int
	// Verbose also prints every event.
	Verbose bool
}

// NewTurnPrinter prints to w.
func NewTurnPrinter(w io.Writer) *TurnPrinter {
	return &TurnPrinter{w: w, names: map[string]string{}}
}

// Print renders one update.
func (p *TurnPrinter) Print(u client.Update) {
	switch {
	case u.Chunk != nil:
		p.chunk(u.Chunk)
	case u.Message != nil:
		p.message(u.Message)
	case u.Event != nil:
		p.event(u.Event)
	}
}

func (p *TurnPrinter) chunk(c *wire.Chunk) {
	// An attempt that never ended was handed back (its worker stopped):
	// another delivery runs the step again, under another attempt or the
	// same one from its start.
	at := [2]int{c.Step, c.Attempt}
	if p.open != nil && (*p.open != at || c.Seq <= p.openSeq) {
		p.line("  [attempt %d of step %d did not finish: the turn was handed back; ignore its partial text]", p.open[1], p.open[0])
	}
	p.open, p.openSeq = &at, c.Seq
	if c.Marker != "" {
		p.open = nil
	}
	if c.Delta != nil && c.Delta.Text != "" {
		fmt.Fprint(p.w, c.Delta.Text)
		p.midLine = !strings.HasSuffix(c.Delta.Text, "\n")
	}
	switch c.Marker {
	case wire.MarkerRetrying:
		p.line("  [attempt %d on %s/%s failed (%s); retrying: ignore its partial text]", c.Attempt, c.Provider, c.Model, c.Failure)
	case wire.MarkerFailed:
		p.line("  [attempt %d on %s/%s failed (%s)]", c.Attempt, c.Provider, c.Model, c.Failure)
	}
}

func (p *TurnPrinter) message(m *wire.Message) {
	switch m.Role {
	case wire.RoleAssistant:
		for _, c := range m.ToolCalls {
			p.names[c.ID] = c.Name
			p.line("→ %s %s", c.Name, clip(c.Arguments, 200))
		}
	case wire.RoleTool:
		name := p.names[m.ToolCallID]
		if name == "" {
			name = m.ToolCallID
		}
		mark := "←"
		if m.IsError {
			mark = "← (error)"
		}
		if m.Synthesized {
			mark = "← (repaired by turnstream)"
		}
		p.line("%s %s: %s", mark, name, clip(m.Content, 300))
	}
}

func (p *TurnPrinter) event(e *wire.SessionEvent) {
	if p.Verbose && !e.Terminal() {
		p.line("  · %s", EventLine(e))
	}
	if !e.Terminal() {
		return
	}
	p.line("")
	switch e.Type {
	case wire.EventTurnCompleted:
		p.line("✓ %s", summary(e))
	default:
		p.line("✗ %s", summary(e))
	}
}

func (p *TurnPrinter) line(format string, args ...any) {
	if p.midLine {
		fmt.Fprintln(p.w)
		p.midLine = false
	}
	fmt.Fprintf(p.w, format+"\n", args...)
}

// summary is a terminal event's line: its type, its reason, and for a
// completed turn its counts, then its duration.
func summary(e *wire.SessionEvent) string {
	var b strings.Builder
	b.WriteString(e.Type)
	p, err := e.Decode()
	if err != nil {
		return b.String()
	}
	took := int64(-1)
	switch p := p.(type) {
	case wire.TurnCompleted:
		fmt.Fprintf(&b, ": %d steps, %d tool calls, %d input / %d output tokens", p.Steps, p.ToolCalls, p.InputTokens, p.OutputTokens)
		took = p.DurationMS
	case wire.TurnFailed:
		fmt.Fprintf(&b, " (%s)", p.Reason)
		took = p.DurationMS
	case wire.TurnRejected:
		if p.Field != "" {
			fmt.Fprintf(&b, " (%s: %s)", p.Reason, p.Field)
		} else {
			fmt.Fprintf(&b, " (%s)", p.Reason)
		}
	}
	if took >= 0 {
		fmt.Fprintf(&b, ", %s", (time.Duration(took) * time.Millisecond).Round(time.Millisecond))
	}
	return b.String()
}

// EventLine renders an event on one line: type, turn, step, attempt, then
// the payload as it travels (its keys in order), so an event of a type
// added later prints as fully as a known one.
func EventLine(e *wire.SessionEvent) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s", e.Type)
	if e.TurnID != "" {
		fmt.Fprintf(&b, " turn=%s", e.TurnID)
	}
	if e.Step != 0 {
		fmt.Fprintf(&b, " step=%d", e.Step)
	}
	if e.Attempt != 0 {
		fmt.Fprintf(&b, " attempt=%d", e.Attempt)
	}
	keys := make([]string, 0, len(e.Payload))
	for k := range e.Payload {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%v", k, e.Payload[k])
	}
	return b.String()
}

func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

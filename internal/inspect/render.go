package inspect

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/turnstream/turnstream/internal/console"
	"github.com/turnstream/turnstream/pkg/wire"
)

// WriteTurn prints t for a person: a header with the outcome and usage,
// the steps with their attempts and tool calls, then the timeline.
func WriteTurn(w io.Writer, t *Turn) error {
	b := &strings.Builder{}
	fmt.Fprintf(b, "turn %s of session %s\n", t.TurnID, t.SessionID)
	fmt.Fprintf(b, "  outcome  %s\n", outcome(t.Outcome, t.Reason, t.Field, t.Duration))
	fmt.Fprintf(b, "  started  %s\n", t.Started.UTC().Format(time.RFC3339Nano))
	fmt.Fprintf(b, "  usage    %s\n", usage(t.Usage))
	if t.Truncated || t.Skipped > 0 {
		fmt.Fprintf(b, "  note     %s\n", partial(t.Truncated, t.Skipped))
	}

	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	for _, s := range t.Steps {
		fmt.Fprintf(tw, "\nstep %d\n", s.Step)
		for _, a := range s.Attempts {
			fmt.Fprintf(tw, "  attempt %d\t%s\t%s\t%s\t%s\t%d chunks\t%s\n", a.Attempt, target(a.Provider, a.Model),
				marker(a), dash(a.FinishReason), attemptUsage(a.Usage), a.Chunks, duration(a.Duration))
		}
		for _, c := range s.ToolCalls {
			fmt.Fprintf(tw, "  tool %s\t%s\t%s\t%s\n", c.Tool, c.CallID, callOutcome(c), duration(c.Duration))
		}
	}
	tw.Flush() //nolint:errcheck // a strings.Builder

	fmt.Fprintf(b, "\ntimeline\n")
	tw = tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	for _, e := range t.Timeline {
		fmt.Fprintf(tw, "  %s\t%s\n", offset(e.Time.Sub(t.Started)), entryLine(e))
	}
	tw.Flush() //nolint:errcheck // a strings.Builder
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteSession prints s for a person: one line per turn.
func WriteSession(w io.Writer, s *Session) error {
	b := &strings.Builder{}
	fmt.Fprintf(b, "session %s: %d turns, %d messages\n", s.SessionID, len(s.Turns), s.Messages)
	if s.Truncated || s.Skipped > 0 {
		fmt.Fprintf(b, "  note: %s\n", partial(s.Truncated, s.Skipped))
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\nSTARTED\tTURN\tOUTCOME\tSTEPS\tTOOL CALLS\tMESSAGES\tTOKENS IN/OUT\tDURATION\n")
	for _, t := range s.Turns {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d/%d\t%s\n", t.Started.UTC().Format("2006-01-02 15:04:05.000"),
			dash(t.TurnID), outcome(t.Outcome, t.Reason, "", 0), t.Steps, t.ToolCalls, t.Messages,
			t.Usage.InputTokens, t.Usage.OutputTokens, duration(t.Duration))
	}
	tw.Flush() //nolint:errcheck // a strings.Builder
	_, err := io.WriteString(w, b.String())
	return err
}

func outcome(typ, reason, field string, d time.Duration) string {
	if typ == "" {
		return "running (no terminal event stored)"
	}
	s := typ
	switch {
	case reason != "" && field != "":
		s += " (" + reason + ": " + field + ")"
	case reason != "":
		s += " (" + reason + ")"
	}
	if d > 0 {
		s += " after " + duration(d)
	}
	return s
}

func usage(u wire.Usage) string {
	return fmt.Sprintf("%d input (%d cached), %d output (%d reasoning) tokens", u.InputTokens, u.CachedInputTokens, u.OutputTokens, u.ReasoningTokens)
}

func attemptUsage(u *wire.Usage) string {
	if u == nil {
		return "-"
	}
	return fmt.Sprintf("%d in / %d out", u.InputTokens, u.OutputTokens)
}

func partial(truncated bool, skipped int) string {
	var parts []string
	if truncated {
		parts = append(parts, fmt.Sprintf("a stream held more than %d records: the view is cut", MaxRecords))
	}
	if skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d records did not decode", skipped))
	}
	return strings.Join(parts, "; ")
}

func target(provider, model string) string {
	if provider == "" && model == "" {
		return "-"
	}
	return provider + "/" + model
}

func marker(a Attempt) string {
	m := a.Marker
	if m == "" {
		return "streaming"
	}
	if a.Failure != "" {
		m += " (" + a.Failure
		if a.HTTPStatus != 0 {
			m += fmt.Sprintf(", HTTP %d", a.HTTPStatus)
		}
		m += ")"
	}
	return m
}

func callOutcome(c ToolCall) string {
	if c.Reason != "" {
		return c.Outcome + " (" + c.Reason + ")"
	}
	return c.Outcome
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// duration rounds d for reading: to the millisecond under a minute, to the
// second past it.
func duration(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Minute:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

func offset(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	return "+" + d.Round(time.Millisecond).String()
}

func entryLine(e Entry) string {
	switch {
	case e.Event != nil:
		ev := *e.Event
		ev.TurnID = "" // the turn is the header's
		return console.EventLine(&ev)
	case e.Marker != nil:
		m := e.Marker
		s := fmt.Sprintf("%-22s step=%d attempt=%d marker=%s target=%s chunks=%d", "chunk marker", m.Step, m.Attempt, m.Marker, target(m.Provider, m.Model), m.Chunks)
		if m.Failure != "" {
			s += " failure=" + m.Failure
		}
		return s
	case e.Message != nil:
		m := e.Message
		s := fmt.Sprintf("%-22s", "message "+m.Role)
		if m.Step != 0 {
			s += fmt.Sprintf(" step=%d", m.Step)
		}
		s += fmt.Sprintf(" seq=%d content_bytes=%d", m.Seq, m.ContentBytes)
		if m.ToolCalls > 0 {
			s += fmt.Sprintf(" tool_calls=%d", m.ToolCalls)
		}
		if m.ToolCallID != "" {
			s += " tool_call_id=" + m.ToolCallID
		}
		if m.IsError {
			s += " is_error=true"
		}
		if m.Synthesized {
			s += " synthesized=true"
		}
		if m.FinishReason != "" {
			s += " finish_reason=" + m.FinishReason
		}
		return s
	}
	return ""
}

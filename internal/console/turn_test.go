package console_test

import (
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/console"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/wire"
)

func TestTurnPrinterTerminal(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name string
		ev   wire.SessionEvent
		want string
	}{
		{"completed", wire.NewEvent("s1", "t1", 0, 0, at, wire.TurnCompleted{
			Steps: 2, ToolCalls: 1, InputTokens: 120, OutputTokens: 30, DurationMS: 1234, FinishReason: wire.FinishStop,
		}), "✓ turn.completed: 2 steps, 1 tool calls, 120 input / 30 output tokens, 1.234s\n"},
		{"failed", wire.NewEvent("s1", "t1", 0, 0, at, wire.TurnFailed{Reason: wire.FailProvider, Step: 1, Class: wire.ClassServer}),
			"✗ turn.failed (provider_failed), 0s\n"},
		{"rejected", wire.NewEvent("s1", "", 0, 0, at, wire.TurnRejected{Reason: wire.ReasonMissingInput}),
			"✗ turn.rejected (missing_input)\n"},
		{"rejected, naming the field", wire.NewEvent("s1", "", 0, 0, at, wire.TurnRejected{Reason: wire.ReasonUnknownField, Field: "budget"}),
			"✗ turn.rejected (unknown_field: budget)\n"},
		{"undecodable", wire.SessionEvent{Type: wire.EventTurnFailed, SessionID: "s1", Time: at, Payload: map[string]any{"step": "one"}},
			"✗ turn.failed\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			p := console.NewTurnPrinter(&b)
			p.Print(client.Update{Event: &tt.ev})
			if got := strings.TrimPrefix(b.String(), "\n"); got != tt.want {
				t.Errorf("Print(%s) = %q; want %q", tt.ev.Type, got, tt.want)
			}
		})
	}
}

func TestEventLine(t *testing.T) {
	ev := wire.NewEvent("s1", "t1", 2, 1, time.Now(), wire.LLMRetry{
		LLMAttempt: wire.LLMAttempt{Provider: "openai", Model: "m", Class: wire.ClassRateLimit, HTTPStatus: 429},
		Policy:     wire.RetryNormal, Retry: 1, DelayMS: 500,
	})
	want := "llm/retry              turn=t1 step=2 attempt=1 class=RATE_LIMIT delay_ms=500 http_status=429 model=m policy=normal provider=openai retry=1"
	if got := console.EventLine(&ev); got != want {
		t.Errorf("EventLine() = %q; want %q", got, want)
	}
}

// TestHandedBackAttempt: text of an attempt that never ended (its worker
// stopped and another delivery ran the step again) is marked as not
// counting before the new attempt's text; attempts that end with a marker
// are not.
func TestHandedBackAttempt(t *testing.T) {
	chunk := func(step, attempt, seq int, text, marker string) client.Update {
		c := &wire.Chunk{Step: step, Attempt: attempt, Seq: seq, Marker: marker}
		if text != "" {
			c.Delta = &wire.Delta{Text: text}
		}
		return client.Update{Chunk: c}
	}
	for _, tt := range []struct {
		name    string
		updates []client.Update
		want    string
	}{
		{"same attempt from its start", []client.Update{chunk(1, 1, 1, "Par", ""), chunk(1, 1, 2, "is", ""), chunk(1, 1, 1, "Paris.", ""), chunk(1, 1, 2, "", wire.MarkerCompleted)},
			"Paris\n  [attempt 1 of step 1 did not finish: the turn was handed back; ignore its partial text]\nParis."},
		{"another attempt", []client.Update{chunk(1, 1, 1, "Par", ""), chunk(1, 2, 1, "Paris.", ""), chunk(1, 2, 2, "", wire.MarkerCompleted)},
			"Par\n  [attempt 1 of step 1 did not finish: the turn was handed back; ignore its partial text]\nParis."},
		{"steps that end", []client.Update{chunk(1, 1, 1, "a", ""), chunk(1, 1, 2, "", wire.MarkerCompleted), chunk(2, 1, 1, "b", ""), chunk(2, 1, 2, "", wire.MarkerCompleted)},
			"ab"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			p := console.NewTurnPrinter(&b)
			for _, u := range tt.updates {
				p.Print(u)
			}
			if b.String() != tt.want {
				t.Errorf("printed %q; want %q", b.String(), tt.want)
			}
		})
	}
}

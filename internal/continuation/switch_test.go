package continuation_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/continuation"
	"github.com/turnstream/turnstream/internal/provider/deepseek"
	"github.com/turnstream/turnstream/internal/provider/responses"
)

// turn is one turn of a session: where it runs and what it must decide.
type turn struct {
	provider, api, model string
	want                 continuation.Decision
}

// runTurns plays turns the way the turn loop uses this package: parse the
// stored state, decide, complete the turn, then store the new envelope or
// clear the slot. Each provider's cursor is "<provider>-<turn index>".
func runTurns(t *testing.T, turns []turn) {
	t.Helper()
	var stored []byte // the worker-only state slot
	now := epoch
	tokens := int64(100)
	for i, tr := range turns {
		env, err := continuation.Parse(stored)
		if err != nil {
			t.Fatalf("turn %d: Parse(%s) error = %v; want nil", i, stored, err)
		}
		cur := continuation.Current{
			Provider: tr.provider, API: tr.api, Model: tr.model,
			SystemPromptHash: promptHash, ToolsetHash: toolsetHash,
		}
		if got := continuation.Decide(env, cur); got != tr.want {
			t.Fatalf("turn %d on %s/%s: Decide(%+v) = %+v; want %+v", i, tr.provider, tr.model, env, got, tr.want)
		}
		now = now.Add(time.Minute)
		tokens += 500
		done := continuation.NewEnvelope(continuation.Completion{
			Provider: tr.provider, API: tr.api, Model: tr.model,
			SystemPromptHash: promptHash, ToolsetHash: toolsetHash,
			Cursor: fmt.Sprintf("%s-%d", tr.provider, i), LoopMessages: 3,
			InputTokens: &tokens, ContextLimit: 128000,
		}, now)
		stored = nil
		if continuation.DecidePersistence(done) {
			stored = mustSerialize(t, done)
		}
	}
}

func TestProviderSwitch(t *testing.T) {
	var (
		start    = continuation.Decision{Action: continuation.StartReplay, Reason: continuation.ReasonNoState}
		noCursor = continuation.Decision{Action: continuation.StartReplay, Reason: continuation.ReasonNoCursor}
		switched = continuation.Decision{Action: continuation.DegradeToReplay, Reason: continuation.ReasonProviderChanged}
		newModel = continuation.Decision{Action: continuation.DegradeToReplay, Reason: continuation.ReasonModelChanged}
		cursor   = func(c string) continuation.Decision {
			return continuation.Decision{Action: continuation.ContinueWithCursor, Cursor: c}
		}
		openai   = func(want continuation.Decision) turn { return turn{"openai", responses.API.Name, "gpt-5", want} }
		azure    = func(want continuation.Decision) turn { return turn{"azure", responses.API.Name, "gpt-5", want} }
		deepseek = func(want continuation.Decision) turn {
			return turn{"deepseek", deepseek.API.Name, "deepseek-chat", want}
		}
		anthropic = func(want continuation.Decision) turn { return turn{"anthropic", "anthropic_messages", "claude", want} }
	)
	tests := []struct {
		name  string
		turns []turn
	}{
		{
			// Seed 003's OpenAI→Gemini case with a second durable provider:
			// the switch degrades on its first turn and the new provider's
			// own cursor is used on the second.
			name: "durable to another durable provider degrades once, then uses its cursor",
			turns: []turn{
				openai(start),
				openai(cursor("openai-0")),
				azure(switched),
				azure(cursor("azure-2")),
				openai(switched),
				openai(cursor("openai-4")),
			},
		},
		{
			name: "durable to replay provider degrades, and the old cursor is never reused",
			turns: []turn{
				openai(start),
				deepseek(switched),
				deepseek(noCursor),
				openai(noCursor),
				openai(cursor("openai-3")),
			},
		},
		{
			name: "durable to turn-local provider degrades, and the old cursor is never reused",
			turns: []turn{
				openai(start),
				anthropic(switched),
				openai(start),
				openai(cursor("openai-2")),
			},
		},
		{
			name: "model switch on one provider degrades once",
			turns: []turn{
				openai(start),
				{"openai", responses.API.Name, "gpt-5-mini", newModel},
				{"openai", responses.API.Name, "gpt-5-mini", cursor("openai-1")},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runTurns(t, tt.turns) })
	}
}

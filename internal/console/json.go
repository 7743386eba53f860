package console

import (
	"context"
	"encoding/json"
	"io"

	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TurnResult is a turn as `submit --json` prints it once the turn ended:
// one JSON object.
type TurnResult struct {
	SessionID string `json:"session_id"`
	TurnID    string `json:"turn_id"`
	// Outcome is the terminal event's type: turn.completed, turn.failed
	// or turn.rejected.
	Outcome string `json:"outcome"`
	// Reason is the terminal event's reason, if it has one; Field the
	// request field a rejection names.
	Reason string `json:"reason,omitempty"`
	Field  string `json:"field,omitempty"`
	// Text is the answer (client.Result.Text).
	Text string `json:"text"`
	// Usage sums the usage of the turn's assistant messages.
	Usage wire.Usage `json:"usage"`
	// Messages are the turn's finalized messages, in session-log order.
	Messages []wire.Message `json:"messages"`
	// Terminal is the event that ended the turn.
	Terminal wire.SessionEvent `json:"terminal"`
}

// NewTurnResult summarizes what client.Turn.Wait collected.
func NewTurnResult(session, turn string, r *client.Result) TurnResult {
	out := TurnResult{
		SessionID: session, TurnID: turn, Outcome: r.Terminal.Type, Text: r.Text,
		Messages: r.Messages, Terminal: r.Terminal,
	}
	if out.Messages == nil {
		out.Messages = []wire.Message{}
	}
	out.Reason, _ = r.Terminal.Payload["reason"].(string)
	out.Field, _ = r.Terminal.Payload["field"].(string)
	for _, m := range r.Messages {
		if m.Role == wire.RoleAssistant && m.Usage != nil {
			out.Usage.Add(*m.Usage)
		}
	}
	return out
}

// UpdateLine is one line of `submit --ndjson`: exactly one of Chunk,
// Message and Event, with its stream sequence.
type UpdateLine struct {
	Chunk     *wire.Chunk        `json:"chunk,omitempty"`
	Message   *wire.Message      `json:"message,omitempty"`
	Event     *wire.SessionEvent `json:"event,omitempty"`
	StreamSeq uint64             `json:"stream_seq"`
}

// FollowNDJSON writes t's updates to w as they arrive, one UpdateLine per
// line, until the turn's terminal event, and returns that event.
func FollowNDJSON(ctx context.Context, t *client.Turn, w io.Writer) (*wire.SessionEvent, error) {
	enc := json.NewEncoder(w)
	return follow(ctx, t, func(u client.Update) error {
		return enc.Encode(UpdateLine{Chunk: u.Chunk, Message: u.Message, Event: u.Event, StreamSeq: u.StreamSeq})
	})
}

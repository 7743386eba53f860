package inspect

import (
	"cmp"
	"math"
	"reflect"
	"slices"
	"time"

	"github.com/turnstream/turnstream/pkg/wire"
)

// Records are what the streams hold of a session or turn, in stream order.
type Records struct {
	Events   []Stored[wire.SessionEvent]
	Messages []Stored[wire.Message]
	Chunks   []Stored[wire.Chunk]
	// Skipped counts the records that did not decode.
	Skipped int
}

// Stored is a record with the time its stream stored it. Timelines are in
// store time: one clock for the three streams (the servers'), where the
// times records carry are their writers'.
type Stored[T any] struct {
	Record T
	Time   time.Time
}

// Turn is one turn as the streams hold it.
type Turn struct {
	SessionID string `json:"session_id"`
	TurnID    string `json:"turn_id"`
	// Outcome is the terminal event's type (turn.completed, turn.failed,
	// turn.rejected), "" while the turn runs (or its end aged out).
	Outcome string `json:"outcome,omitempty"`
	// Reason is the terminal event's reason, if any; Field the request
	// field a rejection names.
	Reason string `json:"reason,omitempty"`
	Field  string `json:"field,omitempty"`
	// Started is when the turn's first record was stored, Ended when its
	// terminal event was; Duration the time between them.
	Started  time.Time     `json:"started"`
	Ended    time.Time     `json:"ended,omitzero"`
	Duration time.Duration `json:"duration_ns,omitempty"`
	// Usage sums the usage of the turn's finalized assistant messages.
	Usage wire.Usage `json:"usage"`
	Steps []Step     `json:"steps"`
	// Timeline is every record of the turn in time order.
	Timeline []Entry `json:"timeline"`
	// Skipped counts records that did not decode; Truncated reports that
	// a stream held more than MaxRecords records to read.
	Skipped   int  `json:"skipped,omitempty"`
	Truncated bool `json:"truncated,omitempty"`
}

// Step is one step of the turn's loop: the provider attempts that made
// its assistant message, and the tool calls it dispatched.
type Step struct {
	Step      int        `json:"step"`
	Attempts  []Attempt  `json:"attempts"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// Attempt is one provider attempt of a step.
type Attempt struct {
	Attempt  int    `json:"attempt"`
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	// Marker ended the attempt: completed, retrying or failed ("" while it
	// streams); Failure is the failure class of a retrying or failed one.
	Marker       string        `json:"marker,omitempty"`
	Failure      string        `json:"failure,omitempty"`
	HTTPStatus   int           `json:"http_status,omitempty"`
	FinishReason string        `json:"finish_reason,omitempty"`
	Chunks       int           `json:"chunks"`
	Duration     time.Duration `json:"duration_ns,omitempty"`
	Usage        *wire.Usage   `json:"usage,omitempty"`
}

// ToolCall is one dispatched tool call and how it ended.
type ToolCall struct {
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	// Outcome is ok, error, repaired (turnstream synthesized the result:
	// Reason says why) or pending (no result stored).
	Outcome  string        `json:"outcome"`
	Reason   string        `json:"reason,omitempty"`
	Duration time.Duration `json:"duration_ns,omitempty"`
}

// Tool call outcomes.
const (
	CallOK       = "ok"
	CallError    = "error"
	CallRepaired = "repaired"
	CallPending  = "pending"
)

// Entry is one record on a timeline.
type Entry struct {
	// Time is when the record was stored.
	Time time.Time `json:"time"`
	// Kind is "event", "message" or "marker" (the chunk that ended an
	// attempt); exactly one of Event, Message and Marker is set.
	Kind    string             `json:"kind"`
	Event   *wire.SessionEvent `json:"event,omitempty"`
	Message *MessageSummary    `json:"message,omitempty"`
	Marker  *MarkerSummary     `json:"marker,omitempty"`
}

// MessageSummary is a finalized message without its content.
type MessageSummary struct {
	Seq          uint64 `json:"seq"`
	Step         int    `json:"step"`
	Role         string `json:"role"`
	ContentBytes int    `json:"content_bytes"`
	ToolCalls    int    `json:"tool_calls,omitempty"`
	ToolCallID   string `json:"tool_call_id,omitempty"`
	IsError      bool   `json:"is_error,omitempty"`
	Synthesized  bool   `json:"synthesized,omitempty"`
	FinishReason string `json:"finish_reason,omitempty"`
}

// MarkerSummary is the marker chunk that ended an attempt.
type MarkerSummary struct {
	Step     int    `json:"step"`
	Attempt  int    `json:"attempt"`
	Marker   string `json:"marker"`
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	Failure  string `json:"failure,omitempty"`
	// Chunks counts the attempt's chunks, its marker included.
	Chunks int `json:"chunks"`
}

// Entry kinds.
const (
	KindEvent   = "event"
	KindMessage = "message"
	KindMarker  = "marker"
)

// BuildTurn lays out the records of one turn (rec holds that turn's only).
func BuildTurn(session, turn string, rec Records) *Turn {
	t := &Turn{SessionID: session, TurnID: turn, Skipped: rec.Skipped, Steps: []Step{}}
	steps := map[int]*Step{}
	stepOf := func(n int) *Step {
		if s, ok := steps[n]; ok {
			return s
		}
		s := &Step{Step: n, Attempts: []Attempt{}}
		steps[n] = s
		return s
	}
	attemptOf := func(step, n int) *Attempt {
		s := stepOf(step)
		for i := range s.Attempts {
			if s.Attempts[i].Attempt == n {
				return &s.Attempts[i]
			}
		}
		s.Attempts = append(s.Attempts, Attempt{Attempt: n})
		return &s.Attempts[len(s.Attempts)-1]
	}
	callOf := func(step int, id string) *ToolCall {
		s := stepOf(step)
		for i := range s.ToolCalls {
			if s.ToolCalls[i].CallID == id {
				return &s.ToolCalls[i]
			}
		}
		s.ToolCalls = append(s.ToolCalls, ToolCall{CallID: id, Outcome: CallPending})
		return &s.ToolCalls[len(s.ToolCalls)-1]
	}
	dispatched := map[string]time.Time{}

	for i := range rec.Events {
		ev, at := &rec.Events[i].Record, rec.Events[i].Time
		t.Timeline = append(t.Timeline, Entry{Time: at, Kind: KindEvent, Event: ev})
		switch ev.Type {
		case wire.EventLLMRequest:
			a := attemptOf(ev.Step, ev.Attempt)
			a.Provider, a.Model = str(ev, "provider"), str(ev, "model")
		case wire.EventLLMFinish:
			a := attemptOf(ev.Step, ev.Attempt)
			a.Provider, a.Model = str(ev, "provider"), str(ev, "model")
			if a.Marker == "" {
				a.Marker = str(ev, "outcome")
			}
			a.FinishReason = str(ev, "finish_reason")
			a.Duration = millis(ev, "duration_ms")
			if _, ok := ev.Payload["input_tokens"]; ok {
				a.Usage = &wire.Usage{
					InputTokens: num(ev, "input_tokens"), CachedInputTokens: num(ev, "cached_input_tokens"),
					OutputTokens: num(ev, "output_tokens"), ReasoningTokens: num(ev, "reasoning_tokens"),
				}
			}
		case wire.EventLLMRetry, wire.EventLLMFallback:
			a := attemptOf(ev.Step, ev.Attempt)
			if a.Failure == "" {
				a.Failure = str(ev, "class")
			}
			if s := int(num(ev, "http_status")); s != 0 && a.HTTPStatus == 0 {
				a.HTTPStatus = s
			}
		case wire.EventToolDispatched:
			c := callOf(ev.Step, str(ev, "call_id"))
			c.Tool = str(ev, "tool")
			dispatched[c.CallID] = at
		case wire.EventToolResult:
			c := callOf(ev.Step, str(ev, "call_id"))
			c.Tool = cmp.Or(c.Tool, str(ev, "tool"))
			c.Outcome = CallOK
			if b, _ := ev.Payload["is_error"].(bool); b {
				c.Outcome = CallError
				c.Reason = str(ev, "planning_error")
			}
			c.Duration = millis(ev, "duration_ms")
			if sent, ok := dispatched[c.CallID]; ok && c.Duration == 0 {
				c.Duration = at.Sub(sent)
			}
		case wire.EventToolRepaired:
			c := callOf(ev.Step, str(ev, "call_id"))
			c.Tool = cmp.Or(c.Tool, str(ev, "tool"))
			c.Outcome, c.Reason = CallRepaired, str(ev, "reason")
			if sent, ok := dispatched[c.CallID]; ok {
				c.Duration = at.Sub(sent)
			}
		}
		if ev.Terminal() {
			t.Outcome, t.Ended = ev.Type, at
			t.Reason, t.Field = str(ev, "reason"), str(ev, "field")
		}
	}

	counts := map[[2]int]int{}
	for i := range rec.Chunks {
		c, at := &rec.Chunks[i].Record, rec.Chunks[i].Time
		key := [2]int{c.Step, c.Attempt}
		counts[key]++
		a := attemptOf(c.Step, c.Attempt)
		a.Chunks = counts[key]
		a.Provider, a.Model = cmp.Or(a.Provider, c.Provider), cmp.Or(a.Model, c.Model)
		if c.Marker == "" {
			continue
		}
		a.Marker = c.Marker
		a.Failure = cmp.Or(c.Failure, a.Failure)
		if c.HTTPStatus != 0 {
			a.HTTPStatus = c.HTTPStatus
		}
		t.Timeline = append(t.Timeline, Entry{Time: at, Kind: KindMarker, Marker: &MarkerSummary{
			Step: c.Step, Attempt: c.Attempt, Marker: c.Marker, Provider: c.Provider, Model: c.Model,
			Failure: c.Failure, Chunks: counts[key],
		}})
	}

	for i := range rec.Messages {
		m, at := &rec.Messages[i].Record, rec.Messages[i].Time
		if m.Role == wire.RoleAssistant && m.Usage != nil {
			t.Usage.Add(*m.Usage)
		}
		t.Timeline = append(t.Timeline, Entry{Time: at, Kind: KindMessage, Message: &MessageSummary{
			Seq: m.Seq, Step: m.Step, Role: string(m.Role), ContentBytes: max(m.ContentBytes, len(m.Content)),
			ToolCalls: len(m.ToolCalls), ToolCallID: m.ToolCallID, IsError: m.IsError, Synthesized: m.Synthesized,
			FinishReason: m.FinishReason,
		}})
	}

	// Stable: records stored at the same instant keep their stream order.
	slices.SortStableFunc(t.Timeline, func(a, b Entry) int { return a.Time.Compare(b.Time) })
	if len(t.Timeline) > 0 {
		t.Started = t.Timeline[0].Time
	}
	if !t.Ended.IsZero() {
		t.Duration = t.Ended.Sub(t.Started)
	}
	delete(steps, 0) // turn-level events are no step
	for _, s := range steps {
		slices.SortFunc(s.Attempts, func(a, b Attempt) int { return cmp.Compare(a.Attempt, b.Attempt) })
		t.Steps = append(t.Steps, *s)
	}
	slices.SortFunc(t.Steps, func(a, b Step) int { return cmp.Compare(a.Step, b.Step) })
	return t
}

// The payload accessors: every payload field the views read is read here.

func str(ev *wire.SessionEvent, key string) string {
	s, _ := ev.Payload[key].(string)
	return s
}

func num(ev *wire.SessionEvent, key string) int64 {
	// JSON decodes numbers as float64, msgpack as the integer type sent.
	switch v := reflect.ValueOf(ev.Payload[key]); {
	case v.CanInt():
		return v.Int()
	case v.CanUint():
		return int64(min(v.Uint(), math.MaxInt64))
	case v.CanFloat():
		return int64(v.Float())
	}
	return 0
}

func millis(ev *wire.SessionEvent, key string) time.Duration {
	return time.Duration(num(ev, key)) * time.Millisecond
}

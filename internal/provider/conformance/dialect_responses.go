package conformance

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/turnstream/turnstream/internal/mockllm"
)

// Responses is the OpenAI Responses API dialect: typed events with
// sequence numbers, one output item per message, reasoning or function
// call, each call ended by its output_item.done, and a terminal
// response.completed or response.incomplete instead of [DONE].
type Responses struct {
	// ItemIDPerEvent gives every event, and the terminal output, a new
	// item id for the same item, as some OpenAI-compatible gateways do;
	// only output_index says which item an event belongs to.
	ItemIDPerEvent bool
}

// Features implements Dialect.
func (Responses) Features() []Feature { return []Feature{Reasoning, EOFIsTruncation} }

// Render implements Dialect.
func (d Responses) Render(tr Transcript) *mockllm.Response {
	if tr.Status != 0 && tr.Status != 200 {
		return mockllm.Error(tr.Status, tr.Code, tr.Message, tr.Header)
	}
	r := &respRender{calls: map[int]*respItem{}, idPerEvent: d.ItemIDPerEvent}
	r.event("response.created", map[string]any{"response": map[string]any{"id": "resp_conf", "object": "response", "status": "in_progress", "output": []any{}}})
	var fin string
	var use *Usage
	for _, ev := range tr.Events {
		switch ev.Kind {
		case EvText:
			it := r.open(&r.msg, "message", "msg_conf")
			it.text.WriteString(ev.Text)
			r.event("response.output_text.delta", map[string]any{"item_id": it.id, "output_index": it.index, "content_index": 0, "delta": ev.Text})
		case EvRefusal:
			it := r.open(&r.msg, "message", "msg_conf")
			it.refusal = true
			it.text.WriteString(ev.Text)
			r.event("response.refusal.delta", map[string]any{"item_id": it.id, "output_index": it.index, "content_index": 0, "delta": ev.Text})
		case EvReasoning:
			it := r.open(&r.reason, "reasoning", "rs_conf")
			it.text.WriteString(ev.Text)
			r.event("response.reasoning_summary_text.delta", map[string]any{"item_id": it.id, "output_index": it.index, "summary_index": 0, "delta": ev.Text})
		case EvToolStart:
			it := &respItem{id: fmt.Sprintf("fc_conf_%d", ev.Index), kind: "function_call", index: r.next, callID: ev.ID, name: ev.Name}
			r.next++
			r.calls[ev.Index] = it
			r.event("response.output_item.added", map[string]any{"output_index": it.index, "item": it.json("in_progress")})
		case EvToolArgs:
			it := r.calls[ev.Index]
			it.text.WriteString(ev.Text)
			r.event("response.function_call_arguments.delta", map[string]any{"item_id": it.id, "output_index": it.index, "delta": ev.Text})
		case EvToolDone:
			it := r.calls[ev.Index]
			r.event("response.function_call_arguments.done", map[string]any{"item_id": it.id, "output_index": it.index, "arguments": it.text.String()})
			r.done(it)
		case EvMetadata:
			r.event("response.in_progress", map[string]any{"response": map[string]any{"id": "resp_conf", "status": "in_progress"}})
		case EvFinish:
			if ev.Text != "" {
				fin = ev.Text
			}
		case EvUsage:
			use = ev.Usage
		case EvError:
			r.event("error", map[string]any{"code": ev.Code, "message": ev.Text, "param": nil})
		case EvComment:
			r.frames = append(r.frames, mockllm.Frame{Comment: "keep-alive"})
		}
	}
	if tr.Malformed {
		r.frames = append(r.frames, mockllm.Frame{Event: "response.output_text.delta", Data: `{"type":"response.output_text.delta","delta":"x"`})
	}
	resp := &mockllm.Response{Header: tr.Header, Stall: tr.Stall}
	switch tr.End {
	case EndTerminal:
		for _, it := range []*respItem{r.reason, r.msg} {
			if it != nil && !it.finished {
				r.done(it)
			}
		}
		r.terminal(fin, use)
	case EndDisconnect:
		resp.DisconnectAfter = len(r.frames)
	}
	resp.Frames = r.frames
	return resp
}

type respItem struct {
	id, kind     string
	index        int
	callID, name string
	text         strings.Builder
	finished     bool
	refusal      bool // a message whose text is a refusal part
}

func (it *respItem) json(status string) map[string]any {
	m := map[string]any{"id": it.id, "type": it.kind, "status": status}
	switch it.kind {
	case "function_call":
		m["call_id"], m["name"], m["arguments"] = it.callID, it.name, it.text.String()
	case "message":
		m["role"] = "assistant"
		m["content"] = []any{map[string]any{"type": "output_text", "text": it.text.String(), "annotations": []any{}}}
		if it.refusal {
			m["content"] = []any{map[string]any{"type": "refusal", "refusal": it.text.String()}}
		}
	case "reasoning":
		m["summary"] = []any{map[string]any{"type": "summary_text", "text": it.text.String()}}
	}
	return m
}

type respRender struct {
	frames      []mockllm.Frame
	seq, next   int
	msg, reason *respItem
	calls       map[int]*respItem
	output      []*respItem
	idPerEvent  bool
}

// mint is the item id an event names the item id by: id itself, or with
// ItemIDPerEvent one no other event uses.
func (r *respRender) mint(id string) string {
	if !r.idPerEvent {
		return id
	}
	return fmt.Sprintf("%s_gw%d", id, r.seq)
}

func (r *respRender) event(typ string, fields map[string]any) {
	if id, ok := fields["item_id"].(string); ok {
		fields["item_id"] = r.mint(id)
	}
	if it, ok := fields["item"].(map[string]any); ok {
		it["id"] = r.mint(it["id"].(string))
	}
	fields["type"] = typ
	fields["sequence_number"] = r.seq
	r.seq++
	b, _ := json.Marshal(fields) // plain values: cannot fail
	r.frames = append(r.frames, mockllm.Frame{Event: typ, Data: string(b)})
}

func (r *respRender) open(slot **respItem, kind, id string) *respItem {
	if *slot == nil {
		*slot = &respItem{id: id, kind: kind, index: r.next}
		r.next++
		r.event("response.output_item.added", map[string]any{"output_index": (*slot).index, "item": (*slot).json("in_progress")})
	}
	return *slot
}

func (r *respRender) done(it *respItem) {
	it.finished = true
	r.output = append(r.output, it)
	r.event("response.output_item.done", map[string]any{"output_index": it.index, "item": it.json("completed")})
}

// terminal ends the response: completed, or incomplete for a length,
// filter or error-like finish.
func (r *respRender) terminal(fin string, use *Usage) {
	status, reason := "completed", ""
	switch fin {
	case "", "stop", "tool_calls", "end_turn":
	case "length":
		status, reason = "incomplete", "max_output_tokens"
	case "content_filter":
		status, reason = "incomplete", "content_filter"
	default:
		status, reason = "incomplete", fin
	}
	// The output array is in output_index order, whatever order the items
	// were done in.
	slices.SortFunc(r.output, func(a, b *respItem) int { return a.index - b.index })
	out := make([]any, 0, len(r.output))
	for _, it := range r.output {
		m := it.json("completed")
		m["id"] = r.mint(it.id)
		out = append(out, m)
	}
	resp := map[string]any{"id": "resp_conf", "object": "response", "status": status, "output": out}
	if reason != "" {
		resp["incomplete_details"] = map[string]any{"reason": reason}
	}
	if use != nil {
		resp["usage"] = map[string]any{
			"input_tokens": use.Prompt, "input_tokens_details": map[string]any{"cached_tokens": use.Cached},
			"output_tokens": use.Completion, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens": use.Prompt + use.Completion,
		}
	}
	typ := "response.completed"
	if status == "incomplete" {
		typ = "response.incomplete"
	}
	r.event(typ, map[string]any{"response": resp})
}

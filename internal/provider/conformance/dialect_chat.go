package conformance

import (
	"encoding/json"

	"github.com/turnstream/turnstream/internal/mockllm"
)

// Dialect renders transcripts in one wire API's shape.
type Dialect interface {
	// Features lists what the dialect can express.
	Features() []Feature
	// Render is the mock provider's answer for tr.
	Render(tr Transcript) *mockllm.Response
}

// Chat is the Chat Completions dialect (OpenAI and every compatible server).
type Chat struct {
	// ReasoningField names the reasoning delta field. Default
	// "reasoning_content".
	ReasoningField string
}

// Features implements Dialect.
func (Chat) Features() []Feature {
	return []Feature{RawFinish, UsagePlacements, ChatQuirks, Reasoning, EOFIsTruncation}
}

type chatUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details,omitempty"`
}

func toChatUsage(u *Usage, completion int) *chatUsage {
	cu := &chatUsage{PromptTokens: u.Prompt, CompletionTokens: completion, TotalTokens: u.Prompt + completion}
	if u.Cached > 0 {
		cu.PromptTokensDetails = &struct {
			CachedTokens int `json:"cached_tokens"`
		}{u.Cached}
	}
	return cu
}

// Render implements Dialect.
func (d Chat) Render(tr Transcript) *mockllm.Response {
	if tr.Status != 0 && tr.Status != 200 {
		return mockllm.Error(tr.Status, tr.Code, tr.Message, tr.Header)
	}
	field := d.ReasoningField
	if field == "" {
		field = "reasoning_content"
	}
	var final *Usage
	for _, ev := range tr.Events {
		if ev.Kind == EvUsage {
			final = ev.Usage
		}
	}
	content := 0
	for _, ev := range tr.Events {
		if ev.Kind == EvText || ev.Kind == EvToolArgs || ev.Kind == EvReasoning || ev.Kind == EvRefusal {
			content++
		}
	}
	var frames []mockllm.Frame
	emitted := 0
	chunk := func(choice map[string]any, extra map[string]any) {
		c := map[string]any{"id": "chatcmpl-conf", "object": "chat.completion.chunk", "created": 1767225600, "model": "m"}
		if choice != nil {
			choice["index"] = 0
			c["choices"] = []any{choice}
		} else {
			c["choices"] = []any{}
		}
		if tr.Placement == UsageCumulative && final != nil && choice != nil {
			c["usage"] = toChatUsage(final, final.Completion*emitted/max(content, 1))
		}
		for k, v := range extra {
			c[k] = v
		}
		b, _ := json.Marshal(c) // plain values: cannot fail
		frames = append(frames, mockllm.Frame{Data: string(b)})
	}
	delta := func(d map[string]any) map[string]any {
		return map[string]any{"delta": d, "finish_reason": nil}
	}
	for _, ev := range tr.Events {
		switch ev.Kind {
		case EvText:
			emitted++
			chunk(delta(map[string]any{"content": ev.Text}), nil)
		case EvReasoning:
			emitted++
			chunk(delta(map[string]any{field: ev.Text}), nil)
		case EvRefusal:
			emitted++
			chunk(delta(map[string]any{"content": nil, "refusal": ev.Text}), nil)
		case EvToolStart:
			chunk(delta(map[string]any{"tool_calls": []any{map[string]any{
				"index": ev.Index, "id": ev.ID, "type": "function",
				"function": map[string]any{"name": ev.Name, "arguments": ""},
			}}}), nil)
		case EvToolArgs:
			emitted++
			chunk(delta(map[string]any{"tool_calls": []any{map[string]any{
				"index": ev.Index, "function": map[string]any{"arguments": ev.Text},
			}}}), nil)
		case EvToolDone:
			// Chat Completions has no per-call end: calls end at [DONE].
		case EvMetadata:
			frames = append(frames, mockllm.Frame{Data: `{"id":"","object":"","created":0,"model":"","choices":[],"prompt_filter_results":[{"prompt_index":0,"content_filter_results":{}}]}`})
		case EvFinish:
			var reason any
			if ev.Text != "" {
				reason = ev.Text
			}
			choice := map[string]any{"delta": map[string]any{}, "finish_reason": reason}
			var extra map[string]any
			if final != nil {
				switch tr.Placement {
				case UsageOnFinish, UsageTwice:
					extra = map[string]any{"usage": toChatUsage(final, final.Completion)}
				case UsageInChoice:
					choice["usage"] = toChatUsage(final, final.Completion)
				}
			}
			chunk(choice, extra)
		case EvUsage:
			if tr.Placement == UsageChunk || tr.Placement == UsageTwice {
				chunk(nil, map[string]any{"usage": toChatUsage(ev.Usage, ev.Usage.Completion)})
			}
		case EvError:
			b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": ev.Text, "type": ev.Code, "code": ev.Code}})
			frames = append(frames, mockllm.Frame{Data: string(b)})
		case EvComment:
			frames = append(frames, mockllm.Frame{Comment: "keep-alive"})
		}
	}
	if tr.Malformed {
		frames = append(frames, mockllm.Frame{Data: `{"choices":[{"index":0,"delta":{"content":"x"}`})
	}
	resp := &mockllm.Response{Frames: frames, Header: tr.Header, Stall: tr.Stall}
	switch tr.End {
	case EndTerminal:
		resp.Done = true
	case EndDisconnect:
		resp.DisconnectAfter = len(frames)
	}
	return resp
}

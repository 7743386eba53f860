package mockllm

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// Stream builds the frames of a Chat Completions stream in OpenAI's shape.
type Stream struct {
	id     string
	model  string
	frames []Frame
}

// NewStream starts a stream for model, whose first chunk carries the role.
func NewStream(model string) *Stream {
	s := &Stream{id: "chatcmpl-mock", model: model}
	s.chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	return s
}

type chunkJSON struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []choiceJSON  `json:"choices"`
	Usage   *usageJSONOut `json:"usage,omitempty"`
}

type choiceJSON struct {
	Index        int            `json:"index"`
	Delta        map[string]any `json:"delta"`
	FinishReason *string        `json:"finish_reason"`
}

type usageJSONOut struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func (s *Stream) chunk(delta map[string]any, finish *string, usage *usageJSONOut) *Stream {
	c := chunkJSON{ID: s.id, Object: "chat.completion.chunk", Created: 1767225600, Model: s.model, Usage: usage}
	if delta != nil || finish != nil {
		if delta == nil {
			delta = map[string]any{}
		}
		c.Choices = []choiceJSON{{Delta: delta, FinishReason: finish}}
	} else {
		c.Choices = []choiceJSON{}
	}
	b, _ := json.Marshal(c) // plain values: cannot fail
	return s.Raw(string(b))
}

// Raw appends a data frame written verbatim.
func (s *Stream) Raw(data string) *Stream {
	s.frames = append(s.frames, Frame{Data: data})
	return s
}

// Add appends arbitrary frames (comments, events, verbatim bytes).
func (s *Stream) Add(f ...Frame) *Stream {
	s.frames = append(s.frames, f...)
	return s
}

// Text streams text one word per chunk.
func (s *Stream) Text(text string) *Stream {
	for _, p := range Words(text) {
		s.chunk(map[string]any{"content": p}, nil, nil)
	}
	return s
}

// Reasoning streams reasoning one word per chunk in the named delta field
// ("reasoning_content", "reasoning").
func (s *Stream) Reasoning(field, text string) *Stream {
	for _, p := range Words(text) {
		s.chunk(map[string]any{field: p}, nil, nil)
	}
	return s
}

// Call is a tool call the mock makes.
type Call struct {
	ID        string
	Name      string
	Arguments string
}

// ToolCalls streams calls in parallel: each call's first fragment carries
// index, id and name, then the arguments are split into pieces of at most
// split bytes (anywhere, even inside a key or an escape, but never inside a
// UTF-8 sequence: a character longer than split is one piece) and the calls'
// fragments interleave.
func (s *Stream) ToolCalls(split int, calls ...Call) *Stream {
	if split <= 0 {
		split = 1 << 30
	}
	pieces := make([][]string, len(calls))
	for i, c := range calls {
		s.chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""},
		}}}, nil, nil)
		for a := c.Arguments; a != ""; {
			n := min(split, len(a))
			// Never cut inside a UTF-8 sequence: JSON-encoding the piece
			// would turn the halves into U+FFFD.
			for n > 0 && n < len(a) && !utf8.RuneStart(a[n]) {
				n--
			}
			if n == 0 {
				_, n = utf8.DecodeRuneInString(a)
			}
			pieces[i] = append(pieces[i], a[:n])
			a = a[n:]
		}
	}
	for more := true; more; {
		more = false
		for i := range calls {
			if len(pieces[i]) == 0 {
				continue
			}
			more = true
			s.chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "function": map[string]any{"arguments": pieces[i][0]},
			}}}, nil, nil)
			pieces[i] = pieces[i][1:]
		}
	}
	return s
}

// Finish appends the finish chunk.
func (s *Stream) Finish(reason string) *Stream {
	return s.chunk(nil, &reason, nil)
}

// Usage appends an OpenAI include_usage chunk (choices: []).
func (s *Stream) Usage(prompt, completion int) *Stream {
	return s.chunk(nil, nil, &usageJSONOut{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion})
}

// Frames returns the frames built so far.
func (s *Stream) Frames() []Frame { return append([]Frame(nil), s.frames...) }

// Response returns a 200 response streaming the frames, ended by [DONE].
func (s *Stream) Response() *Response {
	return &Response{Frames: s.Frames(), Done: true}
}

// Words splits text into word pieces that keep their following spaces, so
// joining them gives text back.
func Words(text string) []string {
	var out []string
	for text != "" {
		i := strings.IndexByte(text, ' ')
		if i < 0 {
			out = append(out, text)
			break
		}
		j := i
		for j < len(text) && text[j] == ' ' {
			j++
		}
		out = append(out, text[:j])
		text = text[j:]
	}
	return out
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

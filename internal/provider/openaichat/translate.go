package openaichat

import (
	"encoding/json"
	"slices"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaiwire"
	"github.com/turnstream/turnstream/pkg/wire"
)

// chunk is the tolerant shape of one Chat Completions stream chunk. Fields
// whose type varies between servers are kept raw.
type chunk struct {
	Choices []choice        `json:"choices"`
	Usage   json.RawMessage `json:"usage"`
	Error   json.RawMessage `json:"error"`
	// Object, Message and Code carry vLLM's {"object":"error",...}.
	Object  string          `json:"object"`
	Message string          `json:"message"`
	Code    json.RawMessage `json:"code"`
}

type choice struct {
	Index int    `json:"index"`
	Delta *delta `json:"delta"`
	// Message is the whole answer of a non-streamed chat.completion.
	Message      *delta          `json:"message"`
	FinishReason json.RawMessage `json:"finish_reason"`
	Usage        json.RawMessage `json:"usage"` // Moonshot puts it here
}

type delta struct {
	Content json.RawMessage `json:"content"`
	// Refusal is the model's refusal, sent instead of content (with
	// content null and finish "stop").
	Refusal          json.RawMessage   `json:"refusal"`
	ReasoningContent *string           `json:"reasoning_content"`
	Reasoning        *string           `json:"reasoning"`
	ReasoningDetails []reasoningDetail `json:"reasoning_details"`
	ToolCalls        []toolFragment    `json:"tool_calls"`
}

type reasoningDetail struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type toolFragment struct {
	Index    *int    `json:"index"`
	ID       *string `json:"id"`
	Function struct {
		Name      *string         `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type usageJSON struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
	PromptCacheHitTokens *int64 `json:"prompt_cache_hit_tokens"`
}

type errorJSON struct {
	Code    json.RawMessage `json:"code"`
	Type    string          `json:"type"`
	Message string          `json:"message"`
}

// slot is one tool call's identity as the server presents it.
type slot struct {
	block int
	index int // the server's index, -1 when it sent none
	id    string
	name  string
}

// Translator turns Chat Completions chunks into assembler operations.
type Translator struct {
	Asm       *assemble.Assembler
	slots     []*slot
	next      int // next free block index
	text      int // block index of the text, -1 until text arrives
	reasoning int
	think     thinkSplitter
	usageSum  int64
}

// NewTranslator returns a translator over a fresh assembler.
func NewTranslator() *Translator {
	return &Translator{Asm: assemble.New(), text: -1, reasoning: -1}
}

func (t *Translator) alloc() int { b := t.next; t.next++; return b }

// Frame translates one SSE data payload (not "[DONE]"). It returns a
// *provider.Failure for malformed JSON and in-band errors.
func (t *Translator) Frame(data []byte) error {
	c, err := readChunk(data, "chunk is not valid JSON")
	if err != nil {
		return err
	}
	t.choices(c, func(ch *choice) *delta { return ch.Delta })
	return nil
}

// Body translates a whole non-streamed answer, the chat.completion object
// of a server that ignored stream: true: the message of choice 0 is one
// delta whose tool calls are whole and in order, and the answer is its own
// terminal marker. It returns a *provider.Failure for an error object
// (in-band) and for a body that is not a completion (malformed).
func (t *Translator) Body(data []byte) error {
	c, err := readChunk(data, "response is not valid JSON")
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(c.Choices, func(ch choice) bool { return ch.Index == 0 && ch.Message != nil }) {
		return provider.Fail(provider.ClassMalformed, "response is neither an event stream nor a completion", nil)
	}
	t.choices(c, func(ch *choice) *delta { return ch.Message.positioned() })
	t.Done()
	return nil
}

// readChunk decodes a chunk or a completion, returning its in-band error
// as a failure; malformed names a payload that is not JSON.
func readChunk(data []byte, malformed string) (*chunk, error) {
	var c chunk
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, provider.Fail(provider.ClassMalformed, malformed, err)
	}
	if openaiwire.Present(c.Error) {
		return nil, inBandFailure(c.Error)
	}
	if c.Object == "error" {
		return nil, provider.Fail(provider.ClassifyInBand(openaiwire.Code(c.Code), "", c.Message), "provider error event", nil)
	}
	return &c, nil
}

// choices translates choice 0 of c, its content read by content, and
// usage wherever c carries it.
func (t *Translator) choices(c *chunk, content func(*choice) *delta) {
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue // we never ask for n > 1
		}
		if d := content(ch); d != nil {
			t.delta(d)
		}
		if openaiwire.Present(ch.Usage) {
			t.usage(ch.Usage)
		}
		if s, ok := openaiwire.String(ch.FinishReason); ok && s != "" {
			t.Asm.Finish(s)
		}
	}
	if openaiwire.Present(c.Usage) {
		t.usage(c.Usage)
	}
}

// positioned is a whole message's delta: its tool calls, which carry no
// index, are indexed by position, each one call. nil stays nil.
func (d *delta) positioned() *delta {
	if d == nil {
		return nil
	}
	for i := range d.ToolCalls {
		if d.ToolCalls[i].Index == nil {
			d.ToolCalls[i].Index = &i
		}
	}
	return d
}

// Done records the terminal marker: every block ends.
func (t *Translator) Done() {
	t.flushThink()
	t.Asm.Terminal()
}

func (t *Translator) delta(d *delta) {
	switch {
	case d.ReasoningContent != nil:
		t.addReasoning(*d.ReasoningContent)
	case d.Reasoning != nil:
		t.addReasoning(*d.Reasoning)
	default:
		for _, rd := range d.ReasoningDetails {
			if rd.Type == "" || rd.Type == "reasoning.text" {
				t.addReasoning(rd.Text)
			}
		}
	}
	if s, ok := openaiwire.String(d.Content); ok {
		t.addContent(s)
	} else if openaiwire.Present(d.Content) && d.Content[0] == '[' {
		// Content parts: keep the text parts.
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(d.Content, &parts) == nil {
			for _, p := range parts {
				if p.Type == "text" || p.Type == "" {
					t.addContent(p.Text)
				}
			}
		}
	}
	if s, ok := openaiwire.String(d.Refusal); ok {
		// A refusal is the message's visible text, as the Responses API's
		// refusal parts are: counted against the text limits like text, and
		// never read as reasoning.
		t.addText(s)
	}
	for i := range d.ToolCalls {
		t.toolFragment(&d.ToolCalls[i])
	}
}

func (t *Translator) addReasoning(s string) {
	if s == "" {
		return
	}
	if t.reasoning < 0 {
		t.reasoning = t.alloc()
	}
	t.Asm.Reasoning(t.reasoning, s)
}

func (t *Translator) addText(s string) {
	if s == "" {
		return
	}
	if t.text < 0 {
		t.text = t.alloc()
	}
	t.Asm.Text(t.text, s)
}

// addContent routes content through the <think> splitter.
func (t *Translator) addContent(s string) {
	t.think.feed(s, t.addText, t.addReasoning)
}

func (t *Translator) flushThink() { t.think.flush(t.addText, t.addReasoning) }

// toolFragment resolves a fragment's call identity: by index; a new id with
// a name under an index already in use is a new call (servers that send
// index 0 for every call); without an index, by id, then by position.
func (t *Translator) toolFragment(f *toolFragment) {
	id, name := deref(f.ID), deref(f.Function.Name)
	var s *slot
	if f.Index != nil {
		s = t.lastSlot(func(s *slot) bool { return s.index == *f.Index })
		if s != nil && name != "" && t.startsNewCall(s, id, f.Function.Arguments) {
			s = nil
		}
	} else if id != "" {
		s = t.lastSlot(func(s *slot) bool { return s.id == id })
		if s == nil && name == "" && len(t.slots) > 0 {
			s = t.slots[len(t.slots)-1]
		}
	} else if n := len(t.slots); n > 0 {
		last := t.slots[n-1]
		if name == "" || name == last.name && !json.Valid([]byte(t.Asm.Block(last.block).Text())) {
			s = last
		}
	}
	if s == nil {
		s = &slot{block: t.alloc(), index: -1}
		if f.Index != nil {
			s.index = *f.Index
		}
		t.slots = append(t.slots, s)
	}
	if s.id == "" {
		s.id = id
	}
	if s.name == "" {
		s.name = name
	}
	t.Asm.ToolCall(s.block, id, name)
	args := f.Function.Arguments
	if str, ok := openaiwire.String(args); ok {
		t.Asm.ToolArgs(s.block, str)
	} else if openaiwire.Present(args) {
		t.Asm.ToolArgsObject(s.block, args)
	}
}

// startsNewCall reports whether a named fragment under an index already in
// use begins another call: its id differs from the slot's, or neither has an
// id, the slot's arguments are already one complete JSON value, and the
// fragment brings arguments of its own.
func (t *Translator) startsNewCall(s *slot, id string, args json.RawMessage) bool {
	if id != "" && s.id != "" {
		return id != s.id
	}
	if id != "" || s.id != "" || s.name == "" {
		return false
	}
	text := t.Asm.Block(s.block).Text()
	if str, ok := openaiwire.String(args); ok {
		return str != "" && text != "" && json.Valid([]byte(text))
	}
	return openaiwire.Present(args) && text != "" && json.Valid([]byte(text))
}

func (t *Translator) lastSlot(match func(*slot) bool) *slot {
	for i := len(t.slots) - 1; i >= 0; i-- {
		if match(t.slots[i]) {
			return t.slots[i]
		}
	}
	return nil
}

// usage records a usage report. Reports are final or cumulative, so a later
// one replaces an earlier one unless it counts fewer tokens (a zeroed
// report after the real one).
func (t *Translator) usage(raw json.RawMessage) {
	var u usageJSON
	if json.Unmarshal(raw, &u) != nil {
		return
	}
	sum := u.PromptTokens + u.CompletionTokens
	if sum < t.usageSum {
		return
	}
	t.usageSum = sum
	var cached int64
	if u.PromptCacheHitTokens != nil {
		cached = *u.PromptCacheHitTokens // DeepSeek: prompt_tokens includes hits
	} else if u.PromptTokensDetails != nil {
		cached = u.PromptTokensDetails.CachedTokens
	}
	cached = min(max(cached, 0), u.PromptTokens)
	w := wire.Usage{InputTokens: u.PromptTokens - cached, CachedInputTokens: cached, OutputTokens: u.CompletionTokens}
	if u.CompletionTokensDetails != nil {
		w.ReasoningTokens = u.CompletionTokensDetails.ReasoningTokens
		if w.ReasoningTokens > w.OutputTokens {
			// completion_tokens that exclude reasoning (xAI): OutputTokens
			// must include the reasoning it reports as a part.
			w.OutputTokens += w.ReasoningTokens
		}
	}
	t.Asm.Usage(w)
}

func inBandFailure(raw json.RawMessage) *provider.Failure {
	var e errorJSON
	if s, ok := openaiwire.String(raw); ok {
		e.Message = s
	} else {
		_ = json.Unmarshal(raw, &e) // an unreadable error object is still an error
	}
	f := provider.Fail(provider.ClassifyInBand(openaiwire.Code(e.Code), e.Type, e.Message), "provider error in stream", nil)
	f.RetryAfter = provider.RetryHint(nil, e.Message, timeNow())
	return f
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

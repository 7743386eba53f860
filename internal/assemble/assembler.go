package assemble

import (
	"encoding/json"
	"strings"

	"github.com/turnstream/turnstream/internal/redact"
	"github.com/turnstream/turnstream/pkg/wire"
)

// BlockKind is what a block holds.
type BlockKind uint8

// Block kinds.
const (
	KindText BlockKind = iota + 1
	KindReasoning
	KindToolCall
)

// Block is one content block of a response, identified by its index.
type Block struct {
	Index int
	Kind  BlockKind
	// ID and Name identify a tool call as the provider sent them.
	ID   string
	Name string
	// Ended is set by the block's first end; later operations on it are ignored.
	Ended bool
	text  strings.Builder
	// argsObject holds arguments a provider sent as a JSON object rather
	// than a string; it is the whole argument text.
	argsObject []byte
	// redactor keeps credentials out of the argument deltas; the block
	// itself keeps the faithful text the tool runs with.
	redactor *redact.Stream
}

// Text returns the block's text, reasoning or tool-call arguments so far;
// "" for a nil block.
func (b *Block) Text() string {
	if b == nil {
		return ""
	}
	if b.argsObject != nil {
		return string(b.argsObject)
	}
	return b.text.String()
}

// Assembler collects one provider attempt, within its Limits. Use it from
// one goroutine.
type Assembler struct {
	blocks    []*Block
	byIndex   map[int]*Block
	finishRaw string
	usage     *wire.Usage
	terminal  bool
	explicit  bool
	respID    string
	frame     wire.Delta // the normalized delta of the frame being translated

	limits Limits
	err    *LimitError
	// What the limits count so far: text and reasoning bytes, tool calls,
	// and the message size (see Limits.MessageBytes).
	text, reasoning, calls, message int
}

// New returns an empty assembler.
func New() *Assembler { return &Assembler{byIndex: make(map[int]*Block, 4)} }

// block returns the block at index, creating it with kind; it returns nil
// when the index holds a block of another kind (fragments never cross
// identities) or the block has ended, and when a new tool call would cross
// the limits.
func (a *Assembler) block(index int, kind BlockKind) *Block {
	b, ok := a.byIndex[index]
	if !ok {
		if kind == KindToolCall {
			if !a.within(a.calls, 1, a.limits.ToolCalls, LimitToolCalls) || !a.charge(callAllowance) {
				return nil
			}
			a.calls++
		}
		b = &Block{Index: index, Kind: kind}
		a.byIndex[index] = b
		a.blocks = append(a.blocks, b)
		return b
	}
	if b.Kind != kind || b.Ended {
		return nil
	}
	return b
}

// Has reports whether a block exists at index.
func (a *Assembler) Has(index int) bool { _, ok := a.byIndex[index]; return ok }

// Block returns the block at index, or nil.
func (a *Assembler) Block(index int) *Block { return a.byIndex[index] }

// Text appends visible text to the text block at index.
func (a *Assembler) Text(index int, s string) {
	if s == "" || a.stopped() {
		return
	}
	b := a.block(index, KindText)
	if b == nil || !a.within(a.text, len(s), a.limits.TextBytes, LimitTextBytes) || !a.charge(jsonSize(s)) {
		return
	}
	a.text += len(s)
	b.text.WriteString(s)
	a.frame.Text += s
}

// Reasoning appends reasoning to the reasoning block at index. Reasoning
// never enters the normalized delta.
func (a *Assembler) Reasoning(index int, s string) {
	if s == "" || a.stopped() {
		return
	}
	b := a.block(index, KindReasoning)
	if b == nil || !a.within(a.reasoning, len(s), a.limits.ReasoningBytes, LimitReasoningBytes) {
		return
	}
	a.reasoning += len(s)
	b.text.WriteString(s)
}

// ToolCall starts or continues the tool-call block at index. A non-empty id
// or name is recorded only if the block has none yet: ids and names repeated
// on every fragment are never concatenated, and an empty continuation name
// never erases the first.
func (a *Assembler) ToolCall(index int, id, name string) {
	if a.stopped() {
		return
	}
	_, existed := a.byIndex[index]
	b := a.block(index, KindToolCall)
	if b == nil {
		return
	}
	if !existed {
		d := a.toolDelta(index)
		d.Start = true
	}
	if b.ID == "" && id != "" {
		if !a.charge(jsonSize(id)) {
			return
		}
		b.ID = id
	}
	if b.Name == "" && name != "" {
		if !a.charge(jsonSize(name)) {
			return
		}
		b.Name = name
		a.toolDelta(index).Name = name
	}
}

// ToolArgs appends an argument fragment to the tool-call block at index.
func (a *Assembler) ToolArgs(index int, fragment string) {
	if fragment == "" || a.stopped() {
		return
	}
	b := a.block(index, KindToolCall)
	if b == nil || b.argsObject != nil ||
		!a.within(b.text.Len(), len(fragment), a.limits.ArgumentBytes, LimitArgumentBytes) || !a.charge(jsonSize(fragment)) {
		return
	}
	b.text.WriteString(fragment)
	if b.redactor == nil {
		b.redactor = redact.NewStream()
	}
	a.toolDelta(index).Arguments += b.redactor.Write(fragment)
}

// ToolArgsObject sets the whole arguments of the tool-call block at index
// from a JSON object or array a provider sent instead of a string. It is
// ignored if arguments were already received.
func (a *Assembler) ToolArgsObject(index int, raw []byte) {
	if a.stopped() {
		return
	}
	b := a.block(index, KindToolCall)
	if b == nil || b.text.Len() > 0 || b.argsObject != nil ||
		!a.within(0, len(raw), a.limits.ArgumentBytes, LimitArgumentBytes) || !a.charge(jsonSize(string(raw))) {
		return
	}
	b.argsObject = append([]byte(nil), raw...)
	safe, _ := redact.RedactJSON(string(raw))
	a.toolDelta(index).Arguments += safe
}

// End closes the block at index. The first end is authoritative.
func (a *Assembler) End(index int) {
	b, ok := a.byIndex[index]
	if !ok || b.Ended {
		return
	}
	b.Ended = true
	if b.Kind == KindToolCall {
		d := a.toolDelta(index)
		if b.redactor != nil {
			d.Arguments += b.redactor.Close() // what was held back, redacted
		}
		d.End = true
	}
}

// EndAll closes every open block, in index order of insertion.
func (a *Assembler) EndAll() {
	for _, b := range a.blocks {
		a.End(b.Index)
	}
}

// Finish records the provider's raw finish reason. The last non-empty value
// seen before the terminal marker wins; an empty value never clears it.
func (a *Assembler) Finish(raw string) {
	if raw == "" || a.stopped() || raw == a.finishRaw {
		return
	}
	old := jsonSize(a.finishRaw)
	a.message -= old
	if !a.charge(jsonSize(raw)) {
		a.message += old
		return
	}
	a.finishRaw = raw
}

// Usage records the provider's token counts. Providers report usage once,
// twice, or cumulatively on every chunk; the last report carries the final
// values, so each replaces the one before.
func (a *Assembler) Usage(u wire.Usage) {
	if a.stopped() {
		return
	}
	a.usage = &u
}

// ExplicitEnds is for wire APIs that end each tool call explicitly
// (Responses: output_item.done): at the terminal marker, a tool call the
// provider never ended stays open, so it is not complete and never
// executable. Without it, the terminal marker ends every call (Chat
// Completions has no per-call end).
func (a *Assembler) ExplicitEnds() { a.explicit = true }

// Terminal records that the stream reached its terminal marker and closes
// every block. Nothing changes the assembler after it. The frame that
// reaches it carries the final finish reason and usage, once: what the
// provider reported along the way (a finish on every chunk, cumulative
// usage) is settled only here.
func (a *Assembler) Terminal() {
	if a.stopped() {
		return
	}
	for _, b := range a.blocks {
		if !a.explicit || b.Kind != KindToolCall {
			a.End(b.Index)
		}
	}
	a.terminal = true
	r := a.Response()
	a.frame.FinishReason = r.FinishReason
	a.frame.RawFinishReason = r.RawFinishReason
	a.frame.Usage = r.Usage
}

// ResponseID records the provider's id of the response; the first wins.
func (a *Assembler) ResponseID(id string) {
	if a.respID == "" && id != "" && a.err == nil && a.charge(jsonSize(id)) {
		a.respID = id
	}
}

// Reached reports whether Terminal was called.
func (a *Assembler) Reached() bool { return a.terminal }

// FinishRaw returns the raw finish reason recorded so far.
func (a *Assembler) FinishRaw() string { return a.finishRaw }

// TakeDelta returns the normalized delta accumulated since the last call,
// or nil if the frame carried nothing visible.
func (a *Assembler) TakeDelta() *wire.Delta {
	if a.frame.Empty() {
		a.frame = wire.Delta{}
		return nil
	}
	d := a.frame
	a.frame = wire.Delta{}
	return &d
}

func (a *Assembler) toolDelta(index int) *wire.ToolCallDelta {
	tc := a.frame.ToolCalls
	if n := len(tc); n > 0 && tc[n-1].Index == index {
		return &tc[n-1]
	}
	a.frame.ToolCalls = append(tc, wire.ToolCallDelta{Index: index})
	return &a.frame.ToolCalls[len(a.frame.ToolCalls)-1]
}

// ToolCall is a finalized tool call as the provider sent it.
type ToolCall struct {
	// Index is the call's block index.
	Index int
	// ProviderID is the id the provider sent, possibly empty or unusable;
	// the turn loop normalizes it.
	ProviderID string
	Name       string
	// Arguments is the exact argument text; "{}" for a call with none.
	Arguments string
	// Complete is true only when the provider ended the call, the stream
	// reached its terminal marker, and the arguments are one JSON value.
	Complete bool
}

// Response is a finalized provider response.
type Response struct {
	// Text is the visible text, in block order.
	Text string
	// Reasoning is raw provider reasoning: never visible text, session
	// content, summary input, event payload or log line.
	Reasoning string
	ToolCalls []ToolCall
	// FinishReason is normalized; RawFinishReason is what the provider sent.
	FinishReason    string
	RawFinishReason string
	Usage           *wire.Usage
	// Terminal is true when the stream reached its terminal marker.
	Terminal bool
	// ResponseID is the provider's id of the response, when it has one
	// (the Responses API's cursor for previous_response_id).
	ResponseID string
	// Echo is the provider state its adapter returns for replaying this
	// answer to the same provider (Anthropic's signed and redacted
	// thinking blocks, Responses encrypted reasoning items), opaque to
	// everything but that adapter, which gets it back as
	// provider.Message.Reasoning. Like Reasoning it is never visible text,
	// session content, event payload or log line: it lives in worker-only
	// replay state.
	Echo string
}

// Executable reports whether every tool call may run: the response is
// terminal and each call is complete.
func (r *Response) Executable() bool {
	if !r.Terminal {
		return false
	}
	for _, c := range r.ToolCalls {
		if !c.Complete {
			return false
		}
	}
	return true
}

// Empty reports whether the response carries no text, reasoning or tool call.
func (r *Response) Empty() bool {
	return r.Text == "" && r.Reasoning == "" && len(r.ToolCalls) == 0
}

// Response finalizes what was assembled. Calling it before Terminal yields a
// non-terminal response whose tool calls are not complete.
func (a *Assembler) Response() *Response {
	r := &Response{
		RawFinishReason: a.finishRaw,
		FinishReason:    wire.FinishUnknown,
		Usage:           a.usage,
		Terminal:        a.terminal,
		ResponseID:      a.respID,
	}
	if a.finishRaw != "" {
		r.FinishReason = NormalizeFinish(a.finishRaw)
	}
	var text, reasoning strings.Builder
	for _, b := range a.blocks {
		switch b.Kind {
		case KindText:
			text.WriteString(b.Text())
		case KindReasoning:
			reasoning.WriteString(b.Text())
		case KindToolCall:
			args := b.Text()
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			r.ToolCalls = append(r.ToolCalls, ToolCall{
				Index:      b.Index,
				ProviderID: b.ID,
				Name:       b.Name,
				Arguments:  args,
				Complete:   a.terminal && b.Ended && b.Name != "" && json.Valid([]byte(args)),
			})
		}
	}
	r.Text, r.Reasoning = text.String(), reasoning.String()
	// Complete calls under a stop make a tool turn (forced tool choice,
	// Gemini); tool_calls with no call is an anomaly, not an empty tool turn.
	switch {
	case r.FinishReason == wire.FinishStop && len(r.ToolCalls) > 0:
		r.FinishReason = wire.FinishToolCalls
	case r.FinishReason == wire.FinishToolCalls && len(r.ToolCalls) == 0:
		r.FinishReason = wire.FinishUnknown
	}
	return r
}

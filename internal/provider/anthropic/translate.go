package anthropic

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/pkg/wire"
)

// Content block types the translator keeps; other blocks (server tools and
// their results) are relayed and ignored.
const (
	blockText     = "text"
	blockThinking = "thinking"
	blockRedacted = "redacted_thinking"
	blockToolUse  = "tool_use"
)

// errorEvent is the payload of an error event, and the body of an error
// response.
type errorEvent = sdk.ErrorResponse

// block is what the translator keeps of one content block beside the
// assembler's.
type block struct {
	kind string
	// signature of a thinking block (fragments appended, never copied
	// whole), data of a redacted one.
	signature strings.Builder
	data      string
	// input is a tool_use block's input as its content_block_start sent it;
	// it is the arguments only if no input_json_delta arrives.
	input   []byte
	gotArgs bool
	stopped bool
}

// Translator turns Messages stream events into assembler operations.
type Translator struct {
	asm    *assemble.Assembler
	blocks map[int]*block
	order  []int // block indices in the order they started
	calls  []int // the tool_use blocks' indices, in the same order
	stop   string
	// usage and thinking are the counts reported so far.
	usage    usage
	thinking *int64
}

// NewTranslator returns a translator over a fresh assembler: tool calls
// end only as the stream ends them (ExplicitEnds).
func NewTranslator() *Translator {
	a := assemble.New()
	a.ExplicitEnds()
	return &Translator{asm: a, blocks: map[int]*block{}}
}

// SetLimits bounds what the translator's assembler accepts.
func (t *Translator) SetLimits(l assemble.Limits) { t.asm.SetLimits(l) }

// Err is the first limit crossed, or nil.
func (t *Translator) Err() error { return t.asm.Err() }

// TakeDelta is the normalized delta of the events since the last call.
func (t *Translator) TakeDelta() *wire.Delta { return t.asm.TakeDelta() }

// Reached reports whether message_stop was translated.
func (t *Translator) Reached() bool { return t.asm.Reached() }

// decode reads data into v with the SDK's decoder: invalid JSON is an
// error, a value of an unexpected shape leaves fields unset (the SDK's
// JSON metadata says which were valid).
func decode(data []byte, v any) error { return json.Unmarshal(data, v) }

// Event translates one event: name is its SSE event line, data its
// payload; the payload's type wins, but an error or ping event line is
// that whatever the payload says. It reports whether the event is
// progress (a ping is not), and returns a *provider.Failure for malformed
// JSON and error events; unknown events are ignored. After message_stop,
// Reached.
func (t *Translator) Event(name string, data []byte) (progress bool, err error) {
	if name == "ping" {
		return false, nil
	}
	var ev sdk.MessageStreamEventUnion
	if err := decode(data, &ev); err != nil {
		return true, provider.Fail(provider.ClassMalformed, "event is not valid JSON", err)
	}
	typ := ev.Type
	if name == "error" || typ == "" && name != "" {
		typ = name
	}
	switch typ {
	case "ping":
		return false, nil
	case "error":
		var e errorEvent
		_ = decode(data, &e) // valid JSON: an error of an unexpected shape is still an error
		return true, inBandFailure(&e)
	case "message_start":
		t.asm.ResponseID(ev.Message.ID)
		if ev.Message.JSON.Usage.Valid() {
			t.report(ev.Message.JSON.Usage.Raw())
		}
	case "content_block_start", "content_block_delta", "content_block_stop":
		if !ev.JSON.Index.Valid() {
			return true, provider.Fail(provider.ClassMalformed, typ+" without a block index", nil)
		}
		t.contentEvent(typ, int(ev.Index), &ev)
	case "message_delta":
		if s := string(ev.Delta.StopReason); s != "" {
			t.asm.Finish(s)
			t.stop = s
			t.settleCalls()
		}
		if ev.JSON.Usage.Valid() {
			t.report(ev.JSON.Usage.Raw())
		}
	case "message_stop":
		t.settleCalls()
		t.asm.Terminal()
	}
	return true, nil
}

// contentEvent translates a content block's start, delta or stop.
func (t *Translator) contentEvent(typ string, i int, ev *sdk.MessageStreamEventUnion) {
	b := t.blocks[i]
	switch typ {
	case "content_block_start":
		if b != nil {
			return // the first start of an index is its identity
		}
		cb := &ev.ContentBlock
		b = t.open(i, cb.Type)
		switch cb.Type {
		case blockText:
			t.asm.Text(i, cb.Text)
		case blockThinking:
			t.asm.Reasoning(i, cb.Thinking)
			t.sign(b, cb.Signature)
		case blockRedacted:
			if t.asm.OpaqueReasoning(len(cb.Data)) {
				b.data = cb.Data
			}
		case blockToolUse:
			t.asm.ToolCall(i, cb.ID, cb.Name)
			b.input = []byte(cb.JSON.Input.Raw())
		}
	case "content_block_delta":
		d := &ev.Delta
		switch d.Type {
		case "text_delta":
			if b = t.openAs(i, b, blockText); b != nil {
				t.asm.Text(i, d.Text)
			}
		case "thinking_delta":
			if b = t.openAs(i, b, blockThinking); b != nil {
				t.asm.Reasoning(i, d.Thinking)
			}
		case "signature_delta":
			if b = t.openAs(i, b, blockThinking); b != nil {
				t.sign(b, d.Signature)
			}
		case "input_json_delta":
			if b = t.openAs(i, b, blockToolUse); b != nil {
				t.asm.ToolCall(i, "", "") // a call without its start has no name: never complete
				t.asm.ToolArgs(i, d.PartialJSON)
				b.gotArgs = b.gotArgs || d.PartialJSON != ""
			}
		}
	case "content_block_stop":
		if b == nil || b.stopped {
			return
		}
		b.stopped = true
		if b.kind != blockToolUse {
			t.asm.End(i)
			return
		}
		if !b.gotArgs && isObject(b.input) && !bytes.Equal(compact(b.input), []byte("{}")) {
			t.asm.ToolArgsObject(i, b.input) // the whole input in the start (proxies, replays)
		}
		// Its end waits for the stop reason (settleCalls).
	}
}

// open records a new block at index i.
func (t *Translator) open(i int, kind string) *block {
	b := &block{kind: kind}
	t.blocks[i] = b
	t.order = append(t.order, i)
	if kind == blockToolUse {
		t.calls = append(t.calls, i)
	}
	return b
}

// openAs returns b if it is of kind, opens a block of kind at i if none
// started there (a proxy that sends deltas without a start), and returns
// nil for a block of another kind: fragments never cross block identities.
func (t *Translator) openAs(i int, b *block, kind string) *block {
	switch {
	case b == nil:
		return t.open(i, kind)
	case b.kind != kind:
		return nil
	}
	return b
}

// sign appends a signature fragment to a thinking block, counted as
// reasoning the assembler does not hold.
func (t *Translator) sign(b *block, s string) {
	if s != "" && t.asm.OpaqueReasoning(len(s)) {
		b.signature.WriteString(s)
	}
}

// settleCalls ends the tool calls whose block stopped, once the stop
// reason is known: under a length stop (max_tokens), the block being
// written when the tokens ran out (the last one started) stays open, so
// it is never complete, whatever its arguments. It walks the tool_use
// blocks alone (at most the tool-call limit), not every block: a stream
// of many blocks and many stop reasons costs no more than its size.
func (t *Translator) settleCalls() {
	cut := assemble.NormalizeFinish(t.stop) == wire.FinishLength
	for _, i := range t.calls {
		if !t.blocks[i].stopped || cut && i == t.order[len(t.order)-1] {
			continue
		}
		t.asm.End(i)
	}
}

// Response is the finalized response, its Echo the replay state of its
// signed thinking and redacted thinking blocks, in block order.
func (t *Translator) Response() *assemble.Response {
	r := t.asm.Response()
	var echo []echoBlock
	for _, i := range t.order {
		b := t.blocks[i]
		switch {
		case b.kind == blockThinking && b.signature.Len() > 0:
			text := t.asm.Block(i).Text()
			echo = append(echo, echoBlock{Type: blockThinking, Thinking: &text, Signature: b.signature.String()})
		case b.kind == blockRedacted && b.data != "":
			echo = append(echo, echoBlock{Type: blockRedacted, Data: b.data})
		}
	}
	r.Echo = encodeEcho(echo)
	return r
}

// usage is a usage object as message_start and message_delta send it,
// read from the raw object the SDK decoded: a field absent or null is nil.
type usage struct {
	Input      *int64 `json:"input_tokens"`
	CacheRead  *int64 `json:"cache_read_input_tokens"`
	CacheWrite *int64 `json:"cache_creation_input_tokens"`
	Output     *int64 `json:"output_tokens"`
	Details    *struct {
		Thinking *int64 `json:"thinking_tokens"`
	} `json:"output_tokens_details"`
}

// report merges a usage object into what was reported so far and records
// the result. message_start reports the input and a first output count;
// message_delta's counts are cumulative, so each field sent replaces the
// one before. Input buckets are disjoint: Anthropic's input_tokens counts
// neither cache reads nor cache writes; cache reads are CachedInputTokens,
// cache writes (input processed, then cached) count as InputTokens.
func (t *Translator) report(raw string) {
	var u usage
	if json.Unmarshal([]byte(raw), &u) != nil {
		return // an unreadable usage object reports nothing
	}
	have := &t.usage
	for _, f := range []struct{ dst, src **int64 }{
		{&have.Input, &u.Input}, {&have.CacheRead, &u.CacheRead}, {&have.CacheWrite, &u.CacheWrite}, {&have.Output, &u.Output},
	} {
		if *f.src != nil {
			*f.dst = *f.src
		}
	}
	if u.Details != nil && u.Details.Thinking != nil {
		t.thinking = u.Details.Thinking
	}
	out := count(have.Output)
	t.asm.Usage(wire.Usage{
		InputTokens:       sum(count(have.Input), count(have.CacheWrite)),
		CachedInputTokens: count(have.CacheRead),
		OutputTokens:      out,
		ReasoningTokens:   min(count(t.thinking), out),
	})
}

// count is a reported count, 0 when absent or negative.
func count(p *int64) int64 {
	if p == nil {
		return 0
	}
	return max(*p, 0)
}

// sum is a + b for counts (never negative), saturating: hostile counts
// never wrap into a negative total.
func sum(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func isObject(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{' && json.Valid(raw)
}

func compact(raw []byte) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

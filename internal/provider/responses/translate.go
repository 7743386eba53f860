package responses

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaiwire"
	"github.com/turnstream/turnstream/pkg/wire"
)

var timeNow = time.Now

// slot is one output item and its assembler block.
type slot struct {
	block  int
	kind   string // the item type
	id     string // the first item id (msg_..., fc_..., rs_...) that named it, "" until one did
	output int    // the output index, -1 when its events carried none
	part   int    // the reasoning summary part being streamed, -1 before any
	enc    *ReasoningItem
}

// ReasoningItem is the replay state of one reasoning item: its id and the
// encrypted_content a later request would send back (as a reasoning input
// item) to keep the model's reasoning across stateless calls. It is
// sensitive provider state: the answer's echo keeps it where only workers
// read (DESIGN.md), never in a message, an event or a log.
type ReasoningItem struct {
	ID               string
	EncryptedContent string
}

// Translator turns Responses events, or a whole non-streamed response, into
// assembler operations. The stream feeds it Event by Event; the
// non-streaming mode feeds it one Body; both end in the same item, status
// and usage translation.
type Translator struct {
	Asm      *assemble.Assembler
	slots    []*slot
	byOutput map[int][]*slot // the items at each output index, in the order they opened
	byID     map[string]*slot
	reason   []*ReasoningItem
	textSlot *slot // the message item whose text came last
}

// NewTranslator returns a translator over a fresh assembler.
func NewTranslator() *Translator {
	a := assemble.New()
	a.ExplicitEnds() // a call is complete at its output_item.done, never merely at the end
	return &Translator{Asm: a, byOutput: map[int][]*slot{}, byID: map[string]*slot{}}
}

// Reasoning returns the encrypted reasoning kept so far, one entry per
// reasoning item that carried encrypted_content, in output order: from its
// response.output_item.done, else from the terminal response.
func (t *Translator) Reasoning() []ReasoningItem {
	out := make([]ReasoningItem, 0, len(t.reason))
	for _, r := range t.reason {
		out = append(out, *r)
	}
	return out
}

// Event translates one stream event: name is the SSE event line, data its
// payload. The payload's type wins over the event line. It returns a
// *provider.Failure for malformed JSON, in-band errors and response.failed;
// unknown events are ignored. After a terminal event, t.Asm.Reached().
func (t *Translator) Event(name string, data []byte) error {
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return provider.Fail(provider.ClassMalformed, "event is not valid JSON", err)
	}
	typ, _ := openaiwire.String(env.Type)
	if typ == "" {
		typ = name
	}
	if name == "error" {
		typ = "error" // an error event line is an error whatever its payload says
	}
	switch typ {
	case "response.created", "response.in_progress", "response.queued",
		"response.output_item.added", "response.output_item.done",
		"response.output_text.delta", "response.output_text.done",
		"response.refusal.delta", "response.refusal.done",
		"response.function_call_arguments.delta", "response.function_call_arguments.done",
		"response.reasoning_summary_part.added", "response.reasoning_summary_text.delta", "response.reasoning_text.delta",
		"response.completed", "response.incomplete", "response.failed", "error":
	default:
		return nil // relayed, ignored
	}
	var ev event
	if err := json.Unmarshal(data, &ev); err != nil {
		return provider.Fail(provider.ClassMalformed, "event has an unexpected shape", err)
	}
	switch typ {
	case "error":
		e := errorBody{Code: ev.Code, Message: ev.Message}
		if openaiwire.Present(ev.Error) {
			e = readError(ev.Error)
		}
		return inBandFailure(e, "provider error event")
	case "response.created", "response.in_progress", "response.queued":
		if ev.Response != nil {
			t.Asm.ResponseID(ev.Response.ID)
		}
	case "response.completed", "response.incomplete", "response.failed":
		r := ev.Response
		if r == nil {
			r = &response{}
		}
		return t.terminal(strings.TrimPrefix(typ, "response."), r)
	case "response.output_item.added":
		t.itemAdded(ev.OutputIndex, ev.Item)
	case "response.output_item.done":
		return t.itemDone(ev.OutputIndex, ev.Item, inEvent)
	case "response.output_text.delta", "response.refusal.delta":
		if s := t.lookup(ev.ItemID, ev.OutputIndex, itemMessage, inEvent); s.kind == itemMessage {
			t.text(s, ev.Delta)
		}
	case "response.output_text.done", "response.refusal.done":
		if s := t.lookup(ev.ItemID, ev.OutputIndex, itemMessage, inEvent); s.kind == itemMessage && t.blockText(s) == "" {
			t.text(s, ev.Text+ev.Refusal)
		}
	case "response.function_call_arguments.delta":
		if s := t.lookup(ev.ItemID, ev.OutputIndex, itemFunctionCall, inEvent); s.kind == itemFunctionCall {
			t.Asm.ToolCall(s.block, "", "")
			t.Asm.ToolArgs(s.block, ev.Delta)
		}
	case "response.function_call_arguments.done":
		if s := t.lookup(ev.ItemID, ev.OutputIndex, itemFunctionCall, inEvent); s.kind == itemFunctionCall {
			t.Asm.ToolCall(s.block, "", ev.Name)
			return t.settleArgs(s, ev.Arguments)
		}
	case "response.reasoning_summary_part.added", "response.reasoning_summary_text.delta":
		if s := t.lookup(ev.ItemID, ev.OutputIndex, itemReasoning, inEvent); s.kind == itemReasoning {
			if ev.SummaryIndex != nil {
				t.summaryPart(s, *ev.SummaryIndex)
			}
			if typ == "response.reasoning_summary_text.delta" {
				t.Asm.Reasoning(s.block, ev.Delta)
			}
		}
	case "response.reasoning_text.delta":
		if s := t.lookup(ev.ItemID, ev.OutputIndex, itemReasoning, inEvent); s.kind == itemReasoning {
			t.Asm.Reasoning(s.block, ev.Delta)
		}
	}
	return nil
}

// Body translates a whole non-streamed answer: a response object, whose
// status must be terminal, or an error object sent with a 2xx status.
func (t *Translator) Body(data []byte) error {
	var r response
	if err := json.Unmarshal(data, &r); err != nil {
		return provider.Fail(provider.ClassMalformed, "response is not a JSON object", err)
	}
	switch {
	case r.Status == "" && openaiwire.Present(r.Error):
		return inBandFailure(readError(r.Error), "provider error in response")
	case r.Status == "":
		return provider.Fail(provider.ClassMalformed, "response has no status", nil)
	}
	return t.terminal("", &r)
}

// terminal ends the response: completed, incomplete and cancelled settle
// the items from its output (what the stream missed), record usage and
// finish, and reach the assembler's terminal; failed is a failure. kind is
// the terminal event's kind ("" for a whole response).
func (t *Translator) terminal(kind string, r *response) error {
	status := endStatus(kind, r.Status)
	if status == "" {
		return provider.Fail(provider.ClassMalformed, "response is not finished", nil)
	}
	t.Asm.ResponseID(r.ID)
	if status == "failed" {
		e := readError(r.Error)
		if e.Message == "" && openaiwire.Code(e.Code) == "" {
			return provider.Fail(provider.ClassServer, "response failed", nil)
		}
		return inBandFailure(e, "response failed")
	}
	for i, raw := range r.Output {
		if err := t.itemDone(&i, raw, inOutput); err != nil {
			return err
		}
	}
	t.usage(r.Usage)
	switch status {
	case "completed":
		t.Asm.Finish("completed") // stop, or tool_calls when calls were output
	case "incomplete":
		t.Asm.Finish(incompleteFinish(r.IncompleteDetails))
	default:
		t.Asm.Finish(status) // cancelled: incomplete
	}
	t.Asm.Terminal()
	return nil
}

// endRank orders the ends of a response from the best to the worst.
var endRank = map[string]int{"completed": 1, "incomplete": 2, "cancelled": 2, "failed": 3}

// endStatus is how a response ended when its terminal event's kind and its
// status disagree: the worse of the two (a response.completed event with a
// failed response failed, a response.failed event never succeeds); a status
// that is not an end defers to the kind. "" when neither is an end.
func endStatus(kind, status string) string {
	if endRank[status] == 0 || endRank[kind] > endRank[status] {
		return kind
	}
	return status
}

// incompleteFinish maps incomplete_details.reason to a raw finish reason:
// max_output_tokens (length) and content_filter as sent, anything else
// "incomplete".
func incompleteFinish(raw json.RawMessage) string {
	var d struct {
		Reason string `json:"reason"`
	}
	_ = json.Unmarshal(raw, &d) // unreadable details: incomplete
	switch assemble.NormalizeFinish(d.Reason) {
	case wire.FinishLength, wire.FinishContentFilter:
		return d.Reason
	}
	return "incomplete"
}

// naming is where lookup meets an item.
type naming uint8

const (
	// inEvent: a stream event's output_index and item_id.
	inEvent naming = iota
	// inAdded: output_item.added, which opens an item.
	inAdded
	// inOutput: the terminal response's output, whose positions are
	// inferred, not sent: an id the stream already named wins over them.
	inOutput
)

// lookup returns the slot of an item. Its output index identifies it,
// whatever its id (an OpenAI-compatible gateway may give every event of one
// item a new item_id): at an output index, the item of that id when several
// were opened there, else the latest of kind; a new one when there is none,
// or when output_item.added brings an id other than the one there; in the
// terminal output, an id the stream named first. Without an output index,
// by id, else (neither sent) the last slot if it is of kind; a new slot of
// kind otherwise.
func (t *Translator) lookup(id string, outputIndex *int, kind string, in naming) *slot {
	known := t.byID[id] // never an id of ""
	if outputIndex == nil || *outputIndex < 0 {
		if known != nil {
			return known
		}
		if n := len(t.slots); id == "" && n > 0 && t.slots[n-1].kind == kind {
			return t.slots[n-1]
		}
		return t.open(id, -1, kind)
	}
	at := *outputIndex
	if known != nil && (known.output == at || in == inOutput) {
		return known
	}
	if s := t.latest(at, kind); s != nil && (in != inAdded || id == "" || s.id == "" || s.id == id) {
		if s.id == "" && id != "" {
			s.id = id
			t.byID[id] = s
		}
		return s
	}
	return t.open(id, at, kind)
}

// latest returns the last item of kind opened at output index at, or nil.
func (t *Translator) latest(at int, kind string) *slot {
	items := t.byOutput[at]
	for i := len(items) - 1; i >= 0; i-- {
		if items[i].kind == kind {
			return items[i]
		}
	}
	return nil
}

// open starts a new item of kind at output index at (-1: none).
func (t *Translator) open(id string, at int, kind string) *slot {
	s := &slot{block: len(t.slots), kind: kind, id: id, output: at, part: -1}
	t.slots = append(t.slots, s)
	if at >= 0 {
		t.byOutput[at] = append(t.byOutput[at], s)
	}
	if id != "" && t.byID[id] == nil {
		t.byID[id] = s
	}
	return s
}

// text appends visible text to a message item. Text blocks never
// interleave: once another item's text began, an earlier item takes no more
// (the API streams messages one after the other), so the text the frames
// carried, in order, is always the response's text.
func (t *Translator) text(s *slot, str string) {
	if b := t.Asm.Block(s.block); str == "" || b != nil && b.Ended {
		return
	}
	if p := t.textSlot; p != nil && p != s {
		t.Asm.End(p.block)
	}
	t.textSlot = s
	t.Asm.Text(s.block, str)
}

func (t *Translator) blockText(s *slot) string {
	if b := t.Asm.Block(s.block); b != nil {
		return b.Text()
	}
	return ""
}

// readItem decodes an output item of a kind with a block; ok is false for
// other kinds (web searches, tool calls of hosted tools), which are ignored.
func readItem(raw json.RawMessage) (it item, ok bool, err error) {
	var head struct {
		Type json.RawMessage `json:"type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return it, false, provider.Fail(provider.ClassMalformed, "output item is not a JSON object", err)
	}
	switch typ, _ := openaiwire.String(head.Type); typ {
	case itemMessage, itemFunctionCall, itemReasoning:
	default:
		return it, false, nil
	}
	if err := json.Unmarshal(raw, &it); err != nil {
		return it, false, provider.Fail(provider.ClassMalformed, "output item has an unexpected shape", err)
	}
	return it, true, nil
}

// itemAdded starts an item: a function call gets its call_id and name
// (arguments come as deltas, or with the item's done).
func (t *Translator) itemAdded(outputIndex *int, raw json.RawMessage) {
	it, ok, err := readItem(raw)
	if err != nil || !ok {
		return // an unreadable added item is settled by its done
	}
	s := t.lookup(it.ID, outputIndex, it.Type, inAdded)
	if s.kind == itemFunctionCall && it.Type == itemFunctionCall {
		t.Asm.ToolCall(s.block, it.CallID, it.Name)
	}
}

// itemDone settles and ends a finished item, from response.output_item.done
// or from the terminal response's output (in says which). What the item
// carries fills only what the stream did not deliver into the item's block,
// found by output index whatever the item's id: text and reasoning when the
// block has none, arguments when no delta arrived (deltas that disagree with
// them are malformed). A reasoning item's encrypted_content is kept.
func (t *Translator) itemDone(outputIndex *int, raw json.RawMessage, in naming) error {
	it, ok, err := readItem(raw)
	if err != nil || !ok {
		return err
	}
	s := t.lookup(it.ID, outputIndex, it.Type, in)
	if s.kind != it.Type {
		return nil
	}
	switch it.Type {
	case itemMessage:
		if t.blockText(s) == "" {
			for _, p := range it.Content {
				t.text(s, p.Text+p.Refusal)
			}
		}
	case itemFunctionCall:
		t.Asm.ToolCall(s.block, it.CallID, it.Name)
		if err := t.settleArgs(s, it.Arguments); err != nil {
			return err
		}
		if it.Status == "incomplete" {
			return nil // the provider did not finish the call: it stays open, never executable
		}
	case itemReasoning:
		if t.blockText(s) == "" {
			parts := it.Summary
			if len(parts) == 0 {
				parts = it.Content
			}
			for i, p := range parts {
				if i > 0 {
					t.Asm.Reasoning(s.block, summarySeparator)
				}
				t.Asm.Reasoning(s.block, p.Text)
			}
		}
		if it.EncryptedContent != nil && *it.EncryptedContent != "" && s.enc == nil && t.Asm.OpaqueReasoning(len(*it.EncryptedContent)) {
			s.enc = &ReasoningItem{ID: it.ID, EncryptedContent: *it.EncryptedContent}
			t.reason = append(t.reason, s.enc)
		}
	}
	t.Asm.End(s.block)
	return nil
}

// settleArgs applies a function call's full arguments (a string, or a JSON
// value from proxies that send one) to its block, unless the block has
// ended: they fill a block that received no delta, agree with the deltas,
// or make the stream malformed.
func (t *Translator) settleArgs(s *slot, raw json.RawMessage) error {
	if b := t.Asm.Block(s.block); b == nil || b.Ended {
		return nil
	}
	full, isString := openaiwire.String(raw)
	raw = bytes.TrimSpace(raw)
	if !isString {
		if !openaiwire.Present(raw) || raw[0] != '{' && raw[0] != '[' {
			return nil // absent or null: nothing to settle
		}
		full = string(raw)
	}
	have := t.blockText(s)
	switch {
	case full == "" || sameJSON(have, full):
		return nil
	case have == "" && isString:
		t.Asm.ToolArgs(s.block, full)
		return nil
	case have == "":
		t.Asm.ToolArgsObject(s.block, raw)
		return nil
	}
	return provider.Fail(provider.ClassMalformed, "function call arguments disagree with their deltas", nil)
}

// summarySeparator joins the parts of a reasoning summary.
const summarySeparator = "\n\n"

// summaryPart notes the summary part a reasoning event belongs to: a new
// part after text is separated from it.
func (t *Translator) summaryPart(s *slot, index int) {
	if index == s.part {
		return
	}
	if s.part >= 0 && t.blockText(s) != "" {
		t.Asm.Reasoning(s.block, summarySeparator)
	}
	s.part = index
}

// usage records the final usage: OpenAI's input_tokens include the cached
// ones, which are split off into a disjoint bucket.
func (t *Translator) usage(raw json.RawMessage) {
	var u usageBody
	if !openaiwire.Present(raw) || json.Unmarshal(raw, &u) != nil {
		return
	}
	var cached, reasoning int64
	if u.InputTokensDetails != nil {
		cached = u.InputTokensDetails.CachedTokens
	}
	if u.OutputTokensDetails != nil {
		reasoning = u.OutputTokensDetails.ReasoningTokens
	}
	in := max(u.InputTokens, 0)
	cached = min(max(cached, 0), in)
	t.Asm.Usage(wire.Usage{
		InputTokens:       in - cached,
		CachedInputTokens: cached,
		OutputTokens:      max(u.OutputTokens, 0),
		ReasoningTokens:   min(max(reasoning, 0), max(u.OutputTokens, 0)),
	})
}

func readError(raw json.RawMessage) errorBody {
	var e errorBody
	if s, ok := openaiwire.String(raw); ok {
		e.Message = s
	} else {
		_ = json.Unmarshal(raw, &e) // an unreadable error is still an error
	}
	return e
}

// inBandFailure classifies an error the provider sent with a 2xx status,
// keeping its "try again in 1.2s" hint.
func inBandFailure(e errorBody, reason string) *provider.Failure {
	f := provider.Fail(provider.ClassifyInBand(openaiwire.Code(e.Code), e.Type, e.Message), reason, nil)
	f.RetryAfter = provider.RetryHint(nil, e.Message, timeNow())
	return f
}

package conformance

import (
	"net/http"
	"time"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/pkg/wire"
)

// EvKind is the kind of an abstract stream event.
type EvKind uint8

// Event kinds.
const (
	// EvText is visible text.
	EvText EvKind = iota + 1
	// EvReasoning is reasoning text.
	EvReasoning
	// EvToolStart starts tool call Index with ID and Name.
	EvToolStart
	// EvToolArgs is an argument fragment of tool call Index.
	EvToolArgs
	// EvToolDone ends tool call Index (dialects with per-call ends).
	EvToolDone
	// EvMetadata is a frame with no content (filter results, annotations).
	EvMetadata
	// EvFinish is the provider's finish with its raw reason in Text.
	EvFinish
	// EvUsage reports Usage.
	EvUsage
	// EvError is an in-band error with Code and Text as message.
	EvError
	// EvComment is a keep-alive: an SSE comment, or the dialect's own
	// keep-alive event (Anthropic's ping).
	EvComment
	// EvRefusal is the model's refusal, visible text sent in the wire API's
	// refusal field or part instead of content.
	EvRefusal
	// EvSignature is the signature, in Text, of the reasoning being
	// written (dialects with Signatures).
	EvSignature
	// EvRedacted is a redacted reasoning block, its opaque data in Text
	// (dialects with Signatures).
	EvRedacted
)

// Ev is one abstract stream event.
type Ev struct {
	Kind  EvKind
	Index int
	ID    string
	Name  string
	Text  string
	Code  string
	Usage *Usage
}

// Usage is what a provider reports.
type Usage struct {
	Prompt, Completion, Cached int
}

// End is how a transcript's stream ends.
type End uint8

// Stream endings.
const (
	// EndTerminal sends the dialect's terminal marker.
	EndTerminal End = iota
	// EndEOF closes the stream cleanly without the terminal marker.
	EndEOF
	// EndDisconnect breaks the connection.
	EndDisconnect
)

// Placement is where usage goes in dialects with a choice (Chat
// Completions); others ignore it.
type Placement uint8

// Usage placements.
const (
	// UsageChunk: a separate choices:[] chunk (OpenAI include_usage).
	UsageChunk Placement = iota
	// UsageOnFinish: on the finish chunk (DeepSeek, Mistral).
	UsageOnFinish
	// UsageTwice: on the finish chunk and again after it (Groq, OpenRouter).
	UsageTwice
	// UsageCumulative: cumulatively on every chunk (vLLM).
	UsageCumulative
	// UsageInChoice: inside choices[0].usage (Moonshot).
	UsageInChoice
)

// Transcript is what a provider does for one request.
type Transcript struct {
	Events    []Ev
	End       End
	Placement Placement
	// Stall sends keep-alive comments for this long before anything else.
	Stall time.Duration
	// Status, when not 0 or 200, answers with an HTTP error instead of a
	// stream: Code and Message form the error body.
	Status  int
	Code    string
	Message string
	Header  http.Header
	// Malformed inserts a frame that is not JSON after the events.
	Malformed bool
}

// Want is what the adapter must return.
type Want struct {
	// Class is the expected failure; empty for success.
	Class provider.Class
	// Reason of the failure, when set (a RESPONSE_TOO_LARGE limit's name).
	Reason string
	// RetryAfter is the failure's expected hint (within 5% or 1.5s for
	// HTTP dates).
	RetryAfter time.Duration
	// RequestID of the failure.
	RequestID string

	Text      string
	Reasoning string
	Calls     []Call
	Finish    string
	Usage     *wire.Usage
	// Executable is what Response.Executable() must report when the
	// response has tool calls.
	Executable bool
	// RawFinish, when set, is the raw finish reason the response keeps.
	RawFinish string
	// Echo lists what the response's replay state (Response.Echo) must
	// carry, block by block in this order: the signature of each signed
	// reasoning block, the data of each redacted one. None of it may reach
	// a delta.
	Echo []string
}

// Call is an expected finalized tool call.
type Call struct {
	ID, Name, Arguments string
	Complete            bool
}

// Case is one conformance case.
type Case struct {
	Name string
	Tr   Transcript
	Want Want
	// Needs lists dialect features the case requires.
	Needs []Feature
	// Limits the adapter must enforce (provider.WithLimits); zero for the
	// defaults.
	Limits provider.Limits
}

// Feature is something a dialect may or may not be able to express.
type Feature string

// Dialect features.
const (
	// RawFinish: arbitrary raw finish values (Chat Completions).
	RawFinish Feature = "raw_finish"
	// UsagePlacements: usage in several places of a stream.
	UsagePlacements Feature = "usage_placements"
	// ChatQuirks: Chat Completions wire quirks (object errors, tool_calls
	// without calls, finish on every chunk).
	ChatQuirks Feature = "chat_quirks"
	// Reasoning: a reasoning channel.
	Reasoning Feature = "reasoning"
	// EOFIsTruncation: a clean EOF without the terminal marker is
	// STREAM_CLOSED (every streaming dialect).
	EOFIsTruncation Feature = "eof_truncation"
	// Signatures: signed and redacted reasoning blocks, kept as replay
	// state (Anthropic Messages).
	Signatures Feature = "signatures"
	// TruncatedCalls: a length finish leaves the call being written
	// incomplete, even when its arguments parse (Anthropic Messages,
	// whose calls end explicitly and whose stop reason comes after).
	TruncatedCalls Feature = "truncated_calls"
)

// Helpers to write events.
func text(s string) Ev                { return Ev{Kind: EvText, Text: s} }
func reasoning(s string) Ev           { return Ev{Kind: EvReasoning, Text: s} }
func start(i int, id, name string) Ev { return Ev{Kind: EvToolStart, Index: i, ID: id, Name: name} }
func args(i int, s string) Ev         { return Ev{Kind: EvToolArgs, Index: i, Text: s} }
func done(i int) Ev                   { return Ev{Kind: EvToolDone, Index: i} }
func metadata() Ev                    { return Ev{Kind: EvMetadata} }
func finish(raw string) Ev            { return Ev{Kind: EvFinish, Text: raw} }
func usage(p, c, cached int) Ev {
	return Ev{Kind: EvUsage, Usage: &Usage{Prompt: p, Completion: c, Cached: cached}}
}
func inBand(code, msg string) Ev { return Ev{Kind: EvError, Code: code, Text: msg} }
func comment() Ev                { return Ev{Kind: EvComment} }
func refusal(s string) Ev        { return Ev{Kind: EvRefusal, Text: s} }
func signature(s string) Ev      { return Ev{Kind: EvSignature, Text: s} }
func redacted(data string) Ev    { return Ev{Kind: EvRedacted, Text: data} }

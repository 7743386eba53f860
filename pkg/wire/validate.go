package wire

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Limits bound the size of a TurnRequest. The zero value of a field means the
// DefaultLimits value.
//
// MaxRequestBytes, MaxDepth and MaxElements bound the encoded request and
// are enforced by the decoders' pre-pass (UnmarshalStrictWithin), before
// anything recursive runs; the other fields are checked by Validate on the
// decoded request. Validate also bounds the depth and element count of each
// tool's Parameters, so a request built in Go is as safe as a decoded one.
type Limits struct {
	// MaxInputMessages caps len(Input). Default 64.
	MaxInputMessages int
	// MaxContentBytes caps each input message and the system prompt. Default 256 KiB.
	MaxContentBytes int
	// MaxTools caps len(Tools). Default 128.
	MaxTools int
	// MaxToolSchemaBytes caps each tool's JSON-encoded parameter schema. Default 64 KiB.
	MaxToolSchemaBytes int
	// MaxRequestBytes caps the encoded request. Default 1 MiB, the NATS
	// default max_payload.
	MaxRequestBytes int
	// MaxDepth caps the nesting of arrays and objects anywhere in the
	// request (the request object is level 1, a tool's parameters level
	// 4). Default 64.
	MaxDepth int
	// MaxElements caps the values in the request, containers and scalars
	// alike, object keys not counted. Default 100,000: a 1 MiB request of
	// small values can hold about 500,000, a realistic one a few thousand;
	// 100,000 decoded values stay within tens of MiB.
	MaxElements int
}

// DefaultLimits are used for zero fields of Limits.
var DefaultLimits = Limits{
	MaxInputMessages:   64,
	MaxContentBytes:    256 << 10,
	MaxTools:           128,
	MaxToolSchemaBytes: 64 << 10,
	MaxRequestBytes:    1 << 20,
	MaxDepth:           64,
	MaxElements:        100_000,
}

// Scan returns the limits of the decoders' pre-pass: MaxRequestBytes,
// MaxDepth and MaxElements, defaults applied.
func (l Limits) Scan() ScanLimits {
	l = l.withDefaults()
	return ScanLimits{MaxBytes: l.MaxRequestBytes, MaxDepth: l.MaxDepth, MaxElements: l.MaxElements}
}

func (l Limits) withDefaults() Limits {
	if l.MaxInputMessages <= 0 {
		l.MaxInputMessages = DefaultLimits.MaxInputMessages
	}
	if l.MaxContentBytes <= 0 {
		l.MaxContentBytes = DefaultLimits.MaxContentBytes
	}
	if l.MaxTools <= 0 {
		l.MaxTools = DefaultLimits.MaxTools
	}
	if l.MaxToolSchemaBytes <= 0 {
		l.MaxToolSchemaBytes = DefaultLimits.MaxToolSchemaBytes
	}
	if l.MaxRequestBytes <= 0 {
		l.MaxRequestBytes = DefaultLimits.MaxRequestBytes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultLimits.MaxDepth
	}
	if l.MaxElements <= 0 {
		l.MaxElements = DefaultLimits.MaxElements
	}
	return l
}

// ValidToolName reports whether name can be a tool: a subject token of at
// most 64 characters (the limit OpenAI-compatible APIs put on function names).
func ValidToolName(name string) bool { return len(name) <= 64 && ValidToken(name) }

// Validate checks r as it arrived on the submit subject of subjectSession.
// It returns a *ValidationError naming the first problem found. Nothing in
// it recurses without bound: each tool's Parameters is walked iteratively
// against lim.MaxDepth and lim.MaxElements (and for valid UTF-8 in every
// key and string) before it is encoded to measure its size.
func (r *TurnRequest) Validate(subjectSession string, lim Limits) error {
	lim = lim.withDefaults()
	if !ValidToken(r.SessionID) {
		return invalid(ReasonInvalidSessionID, "session_id", "must be 1-128 characters of [A-Za-z0-9_-]")
	}
	if r.SessionID != subjectSession {
		return invalid(ReasonSessionMismatch, "session_id", "does not match the subject's session token")
	}
	if !ValidToken(r.TurnID) {
		return invalid(ReasonInvalidTurnID, "turn_id", "must be 1-128 characters of [A-Za-z0-9_-]")
	}
	if len(r.Input) == 0 {
		return invalid(ReasonMissingInput, "input", "at least one message is required")
	}
	if len(r.Input) > lim.MaxInputMessages {
		return invalid(ReasonTooLarge, "input", "%d messages, at most %d allowed", len(r.Input), lim.MaxInputMessages)
	}
	hasUser := false
	for i, m := range r.Input {
		field := fmt.Sprintf("input[%d]", i)
		switch m.Role {
		case RoleUser:
			hasUser = true
		case RoleSystem:
		default:
			return invalid(ReasonInvalidRole, field+".role", "must be user or system")
		}
		if err := checkText(field+".content", m.Content, lim.MaxContentBytes); err != nil {
			return err
		}
	}
	if !hasUser {
		return invalid(ReasonMissingInput, "input", "at least one user message is required")
	}
	if err := checkText("system", r.System, lim.MaxContentBytes); err != nil {
		return err
	}
	if r.Route != "" && !ValidToken(r.Route) {
		return invalid(ReasonUnknownRoute, "route", "must be 1-128 characters of [A-Za-z0-9_-]")
	}
	if len(r.Tools) > lim.MaxTools {
		return invalid(ReasonTooLarge, "tools", "%d tools, at most %d allowed", len(r.Tools), lim.MaxTools)
	}
	seen := make(map[string]bool, len(r.Tools))
	for i, t := range r.Tools {
		field := fmt.Sprintf("tools[%d]", i)
		if !ValidToolName(t.Name) {
			return invalid(ReasonInvalidTool, field+".name", "must be 1-64 characters of [A-Za-z0-9_-]")
		}
		if seen[t.Name] {
			return invalid(ReasonInvalidTool, field+".name", "duplicate tool %q", t.Name)
		}
		seen[t.Name] = true
		if err := checkText(field+".description", t.Description, lim.MaxContentBytes); err != nil {
			return err
		}
		if t.Parameters != nil {
			// Bounded first: json.Marshal recurses once per level.
			if err := walkValue(field+".parameters", t.Parameters, lim.Scan(), true); err != nil {
				return err
			}
			b, err := json.Marshal(t.Parameters)
			if err != nil {
				return invalid(ReasonInvalidTool, field+".parameters", "not representable as JSON: %v", err)
			}
			if len(b) > lim.MaxToolSchemaBytes {
				return invalid(ReasonTooLarge, field+".parameters", "%d bytes, at most %d allowed", len(b), lim.MaxToolSchemaBytes)
			}
			if typ, ok := t.Parameters["type"]; ok && typ != "object" {
				return invalid(ReasonInvalidTool, field+".parameters", `schema "type" must be "object"`)
			}
		}
	}
	if b := r.Budgets; b != nil {
		if err := b.validate(); err != nil {
			return err
		}
	}
	return nil
}

// validate checks that every budget is within [0, its maximum].
func (b *Budgets) validate() error {
	counts := []struct {
		field string
		v     int
	}{
		{"budgets.max_iterations", b.MaxIterations},
		{"budgets.max_tool_calls", b.MaxToolCalls},
		{"budgets.max_repeated_tool_failures", b.MaxRepeatedToolFailures},
	}
	for _, c := range counts {
		if c.v < 0 || c.v > MaxBudgetCount {
			return invalid(ReasonInvalidBudgets, c.field, "%d is out of range [0, %d]", c.v, MaxBudgetCount)
		}
	}
	if b.WallClockMS < 0 || b.WallClockMS > MaxBudgetWallClockMS {
		return invalid(ReasonInvalidBudgets, "budgets.wall_clock_ms", "%d is out of range [0, %d] (30 days)", b.WallClockMS, int64(MaxBudgetWallClockMS))
	}
	return nil
}

// Validate checks a tool result published by a tool worker. It does not
// check the token: the worker awaiting the result verifies it, and records
// a result of its turn with a bad or missing token as
// EventToolResultRejected rather than drop it unseen.
func (r *ToolResult) Validate() error {
	if !ValidToken(r.SessionID) {
		return invalid(ReasonInvalidToolResult, "session_id", "must be a subject token")
	}
	if !ValidToken(r.TurnID) {
		return invalid(ReasonInvalidToolResult, "turn_id", "must be a subject token")
	}
	if r.CallID == "" || len(r.CallID) > 128 {
		return invalid(ReasonInvalidToolResult, "call_id", "must be 1-128 characters")
	}
	return nil
}

// Validate checks a tool call received by a tool worker.
func (c *ToolCall) Validate() error {
	if !ValidToken(c.SessionID) {
		return invalid(ReasonInvalidToolRequest, "session_id", "must be a subject token")
	}
	if !ValidToken(c.TurnID) {
		return invalid(ReasonInvalidToolRequest, "turn_id", "must be a subject token")
	}
	if c.CallID == "" || len(c.CallID) > 128 {
		return invalid(ReasonInvalidToolRequest, "call_id", "must be 1-128 characters")
	}
	if !ValidToolName(c.Name) {
		return invalid(ReasonInvalidToolRequest, "name", "must be 1-64 characters of [A-Za-z0-9_-]")
	}
	if !json.Valid([]byte(c.Arguments)) {
		return invalid(ReasonInvalidToolRequest, "arguments", "not valid JSON")
	}
	if !ValidToken(c.Token) {
		// Workers always issue one; a result without it would be rejected.
		return invalid(ReasonInvalidToolRequest, "token", "must be 1-128 characters of [A-Za-z0-9_-]")
	}
	return nil
}

func checkText(field, s string, max int) error {
	if len(s) > max {
		return invalid(ReasonTooLarge, field, "%d bytes, at most %d allowed", len(s), max)
	}
	if !utf8.ValidString(s) {
		return invalid(ReasonMalformed, field, "not valid UTF-8")
	}
	return nil
}

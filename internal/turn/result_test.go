package turn_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/turnstream/turnstream/internal/turn"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// Credentials shaped like real ones. None is live.
const (
	keyOpenAI = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z-Zx9Cv8Bn7Ml6Kj5Hg4Fd3Sa2Qw1Er0Ty_T3BlbkFJ"
	keyStripe = "sk_live_51H8abcdEFGHijklMNOPqrst0123456789"
	keyGitHub = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
)

// TestToolResultStored runs a turn whose tool returns a result through
// the real tool worker SDK and streams, and checks the tool message the
// session log stores: redacted and flagged when it holds a credential,
// truncated with a marker and its full size when it is too long for the
// configured maximum or for one record, in either encoding.
func TestToolResultStored(t *testing.T) {
	const kb400, mb2 = 400 << 10, 2 << 20
	tests := []struct {
		name    string
		codec   wire.Codec
		opts    turn.ResultOptions
		content string
		// want
		redacted  bool
		truncated bool
		full      int  // ContentBytes
		maxShown  int  // at most this many bytes of the result shown
		minShown  int  // and at least this many
		mayFit    bool // truncated or not, depending on the codec's escaping
	}{
		{name: "small result kept", codec: wire.JSON, content: "sunny, 21°C"},
		{name: "credential redacted", codec: wire.JSON, content: `{"deploy_key":"` + keyGitHub + `","note":"stripe ` + keyStripe + `"}`, redacted: true},
		{name: "credential redacted msgpack", codec: wire.Msgpack, content: "export OPENAI_API_KEY=" + keyOpenAI + "\n", redacted: true},
		{name: "credential kept when configured", codec: wire.JSON, opts: turn.ResultOptions{KeepCredentials: true}, content: "token " + keyGitHub},
		// Cut to the max bytes, or further where "<" is escaped to six
		// bytes (json.Marshal's HTML escaping) and 256 KiB do not fit.
		{name: "400 KB of < over the max bytes", codec: wire.JSON, content: strings.Repeat("<", kb400),
			truncated: true, full: kb400, maxShown: turn.DefaultMaxResultBytes, minShown: 100_000},
		{name: "400 KB of < over the max bytes msgpack", codec: wire.Msgpack, content: strings.Repeat("<", kb400),
			truncated: true, full: kb400, maxShown: turn.DefaultMaxResultBytes, minShown: turn.DefaultMaxResultBytes - 100},
		// Stored whole by a JSON codec that does not escape "<", cut to
		// fit one record by one that does: either way the turn goes on.
		{name: "400 KB of < within one record", codec: wire.JSON, opts: turn.ResultOptions{MaxBytes: 8 << 20}, content: strings.Repeat("<", kb400),
			mayFit: true, full: kb400, maxShown: kb400 - 1, minShown: 100_000},
		// Control characters take six bytes each in JSON: 2.4 MB.
		{name: "400 KB escaped cut to fit one record", codec: wire.JSON, opts: turn.ResultOptions{MaxBytes: 8 << 20}, content: strings.Repeat("\x01", kb400),
			truncated: true, full: kb400, maxShown: 1 << 20 / 6, minShown: 150_000},
		{name: "400 KB of < msgpack fits", codec: wire.Msgpack, opts: turn.ResultOptions{MaxBytes: 8 << 20}, content: strings.Repeat("<", kb400)},
		{name: "2 MB cut by the tool worker then the max bytes", codec: wire.JSON, content: strings.Repeat("é", mb2/2),
			truncated: true, full: mb2, maxShown: turn.DefaultMaxResultBytes, minShown: turn.DefaultMaxResultBytes - 100},
		{name: "2 MB msgpack cut to fit one record", codec: wire.Msgpack, opts: turn.ResultOptions{MaxBytes: 8 << 20}, content: strings.Repeat("x", mb2),
			truncated: true, full: mb2, maxShown: 1 << 20, minShown: 900_000},
		// The tool worker cut it (it does not redact) and reported its size.
		{name: "2 MB with a credential", codec: wire.JSON, content: "key=" + keyStripe + " " + strings.Repeat("x", mb2),
			redacted: true, truncated: true, full: mb2 + 5 + len(keyStripe), maxShown: turn.DefaultMaxResultBytes, minShown: turn.DefaultMaxResultBytes - 100},
		{name: "400 KB with a credential", codec: wire.JSON, content: "key=" + keyStripe + " " + strings.Repeat("x", kb400),
			redacted: true, truncated: true, full: kb400 + 5 + len("[REDACTED]"), maxShown: turn.DefaultMaxResultBytes, minShown: turn.DefaultMaxResultBytes - 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.serveTools(map[string]toolworker.Handler{"fetch": func(context.Context, wire.ToolCall) (toolworker.Result, error) {
				return toolworker.Result{Content: tt.content}, nil
			}})
			req := &wire.TurnRequest{SessionID: "s1", TurnID: "t1", Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "go"}},
				Tools: []wire.Tool{{Name: "fetch"}}}
			out := e.run(&turn.Loop{Exec: callThenAnswer("fetch", `{}`), Results: tt.opts}, tt.codec, req)
			if out.Status != wire.EventTurnCompleted {
				t.Fatalf("turn ended %s (%s); want %s", out.Status, out.Reason, wire.EventTurnCompleted)
			}

			msgs, sizes := e.sessionLog("s1")
			m, i := toolMessage(t, msgs)
			if tt.mayFit {
				tt.truncated = m.ContentTruncated
				if !tt.truncated {
					tt.full = 0
				}
			}
			if int64(sizes[i]) > e.nc.MaxPayload() {
				t.Errorf("tool message record is %d bytes; want at most the max payload %d", sizes[i], e.nc.MaxPayload())
			}
			if m.IsError || m.Synthesized {
				t.Errorf("tool message is_error %v, synthesized %v; want a real result", m.IsError, m.Synthesized)
			}
			if m.ContentRedacted != tt.redacted {
				t.Errorf("content_redacted = %v; want %v", m.ContentRedacted, tt.redacted)
			}
			for _, secret := range []string{keyGitHub, keyStripe, keyOpenAI} {
				if tt.redacted && strings.Contains(m.Content, secret) {
					t.Errorf("stored content holds a credential: %.60q…", secret)
				}
			}
			if tt.redacted && !strings.Contains(m.Content, "[REDACTED]") {
				t.Errorf("stored content %.80q…; want [REDACTED] in place of the credential", m.Content)
			}
			if m.ContentTruncated != tt.truncated || m.ContentBytes != tt.full {
				t.Errorf("content_truncated %v, content_bytes %d; want %v, %d", m.ContentTruncated, m.ContentBytes, tt.truncated, tt.full)
			}
			if !tt.truncated {
				if !tt.redacted && m.Content != tt.content {
					t.Errorf("stored content = %.60q… (%d bytes); want the result as returned (%d bytes)", m.Content, len(m.Content), len(tt.content))
				}
			} else {
				body, marker, found := strings.Cut(m.Content, "\n[truncated: ")
				if want := fmt.Sprintf("the tool returned %d bytes; the first %d are shown]", tt.full, len(body)); !found || marker != want {
					t.Errorf("content ends %q; want the marker %q", m.Content[max(0, len(m.Content)-80):], want)
				}
				if len(body) > tt.maxShown || len(body) < tt.minShown {
					t.Errorf("%d bytes of the result shown; want %d to %d", len(body), tt.minShown, tt.maxShown)
				}
				if !utf8.ValidString(body) {
					t.Error("the shown bytes are cut inside a UTF-8 sequence")
				}
			}

			var ev *wire.SessionEvent
			for _, x := range e.events("s1") {
				if x.Type == wire.EventToolResult {
					ev = &x
				}
			}
			if ev == nil {
				t.Fatal("no tool.result event")
			}
			if ev.Payload["content_redacted"] != tt.redacted || ev.Payload["content_truncated"] != tt.truncated {
				t.Errorf("tool.result payload %v; want content_redacted %v, content_truncated %v", ev.Payload, tt.redacted, tt.truncated)
			}
		})
	}
}

// TestPlanningErrorNeverQuotesArguments runs a turn whose model calls a
// tool with a credential its schema refuses: the stored error result, which
// the model reads next, names the place and the rule, never the value.
func TestPlanningErrorNeverQuotesArguments(t *testing.T) {
	e := newEnv(t)
	params := map[string]any{
		"type":       "object",
		"properties": map[string]any{"region": map[string]any{"type": "string", "pattern": "^[a-z]{2}-[a-z]+-[0-9]$"}},
		"required":   []any{"region"},
	}
	req := &wire.TurnRequest{SessionID: "s1", TurnID: "t1", Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "go"}},
		Tools: []wire.Tool{{Name: "deploy", Parameters: params}}}
	out := e.run(&turn.Loop{Exec: callThenAnswer("deploy", `{"region":"`+keyStripe+`"}`)}, wire.JSON, req)
	if out.Status != wire.EventTurnCompleted {
		t.Fatalf("turn ended %s (%s); want %s", out.Status, out.Reason, wire.EventTurnCompleted)
	}
	msgs, _ := e.sessionLog("s1")
	m, _ := toolMessage(t, msgs)
	if !m.IsError || !m.Synthesized {
		t.Errorf("tool message is_error %v, synthesized %v; want a planning error", m.IsError, m.Synthesized)
	}
	if strings.Contains(m.Content, keyStripe) || strings.Contains(m.Content, "sk_live") {
		t.Errorf("planning error quotes the argument: %q", m.Content)
	}
	for _, want := range []string{"/region", "pattern", "/properties/region/pattern"} {
		if !strings.Contains(m.Content, want) {
			t.Errorf("planning error %q; want it to name %q", m.Content, want)
		}
	}
}

// TestTruncateContent covers the truncation the tool workers and the turn
// workers share (wire.TruncateContent).
func TestTruncateContent(t *testing.T) {
	once, _, _ := wire.TruncateContent(strings.Repeat("a", 1000), 200)
	onceShown := strings.Index(once, "\n[")
	tests := []struct {
		name, in  string
		limit     int
		wantShown string // "" with wantCut false: in unchanged
		wantFull  int
		wantCut   bool
	}{
		{name: "fits", in: "hello", limit: 5, wantShown: "hello", wantFull: 5},
		{name: "cut", in: strings.Repeat("a", 1000), limit: 200, wantShown: strings.Repeat("a", 200-len(wire.TruncationMarker(1000, 1000))), wantFull: 1000, wantCut: true},
		{name: "cut at a rune boundary", in: strings.Repeat("é", 500), limit: 200, wantShown: strings.Repeat("é", (200-len(wire.TruncationMarker(1000, 1000)))/2), wantFull: 1000, wantCut: true},
		{name: "cut again keeps the full size", in: once, limit: 150, wantShown: strings.Repeat("a", 150-len(wire.TruncationMarker(1000, onceShown))), wantFull: 1000, wantCut: true},
		{name: "already cut, fits", in: once, limit: 200, wantShown: once[:onceShown], wantFull: 1000, wantCut: true},
		{name: "limit below the marker", in: strings.Repeat("a", 1000), limit: 10, wantShown: "", wantFull: 1000, wantCut: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, full, cut := wire.TruncateContent(tt.in, tt.limit)
			shown, _, marked := wire.SplitTruncated(out)
			if full != tt.wantFull || cut != tt.wantCut || shown != tt.wantShown || marked != tt.wantCut {
				t.Errorf("TruncateContent(%d bytes, %d) = %.30q… (%d shown), %d, %v; want %d shown, %d, %v", len(tt.in), tt.limit, out, len(shown), full, cut, len(tt.wantShown), tt.wantFull, tt.wantCut)
			}
			if cut && tt.limit >= len(wire.TruncationMarker(full, full)) && len(out) > tt.limit {
				t.Errorf("TruncateContent() is %d bytes; want at most %d", len(out), tt.limit)
			}
		})
	}
}

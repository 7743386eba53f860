package assemble_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/pkg/wire"
)

func limited(l assemble.Limits, ops ...op) *assemble.Assembler {
	a := assemble.New()
	a.SetLimits(l)
	for _, o := range ops {
		o(a)
	}
	return a
}

// limitOf is the limit a's first crossing names, "" for none.
func limitOf(t *testing.T, a *assemble.Assembler) string {
	t.Helper()
	err := a.Err()
	if err == nil {
		return ""
	}
	var le *assemble.LimitError
	if !errors.As(err, &le) {
		t.Fatalf("Err() = %v; want a *assemble.LimitError", err)
	}
	return le.Limit
}

func TestAssemblerLimits(t *testing.T) {
	x := func(n int) string { return strings.Repeat("x", n) }
	tests := []struct {
		name   string
		limits assemble.Limits
		ops    []op
		limit  string // "" within the limits
		check  func(t *testing.T, r *assemble.Response)
	}{
		{name: "no limits", ops: []op{text(0, x(1<<20)), reasoning(1, x(1<<20)), terminal()}},
		{name: "text at its limit", limits: assemble.Limits{TextBytes: 10}, ops: []op{text(0, x(4)), text(0, x(6)), terminal()}},
		{name: "text over its limit, the crossing fragment refused", limits: assemble.Limits{TextBytes: 10}, ops: []op{text(0, x(4)), text(0, x(7)), text(0, "y"), terminal()},
			limit: assemble.LimitTextBytes, check: func(t *testing.T, r *assemble.Response) {
				if r.Text != x(4) || r.Terminal {
					t.Errorf("Response() = %q terminal %v; want the 4 bytes before the crossing, not terminal", r.Text, r.Terminal)
				}
			}},
		{name: "text summed over blocks", limits: assemble.Limits{TextBytes: 10}, ops: []op{text(0, x(6)), text(2, x(6))}, limit: assemble.LimitTextBytes},
		{name: "reasoning over its limit", limits: assemble.Limits{ReasoningBytes: 10}, ops: []op{reasoning(0, x(11))}, limit: assemble.LimitReasoningBytes},
		{name: "reasoning is not text", limits: assemble.Limits{TextBytes: 10}, ops: []op{reasoning(0, x(100)), text(1, x(10)), terminal()}},
		{name: "tool calls at their limit", limits: assemble.Limits{ToolCalls: 2}, ops: []op{call(0, "a", "f"), call(1, "b", "f"), call(1, "", ""), terminal()}},
		{name: "tool calls over their limit", limits: assemble.Limits{ToolCalls: 2}, ops: []op{call(0, "a", "f"), call(1, "b", "f"), args(2, "{}")},
			limit: assemble.LimitToolCalls, check: func(t *testing.T, r *assemble.Response) {
				if len(r.ToolCalls) != 2 {
					t.Errorf("Response().ToolCalls = %d; want the 2 before the crossing", len(r.ToolCalls))
				}
			}},
		{name: "arguments at their limit", limits: assemble.Limits{ArgumentBytes: 8}, ops: []op{call(0, "a", "f"), args(0, `{"a":`), args(0, `12}`), call(1, "b", "f"), args(1, `{"c":1}`), terminal()}},
		{name: "arguments over their limit", limits: assemble.Limits{ArgumentBytes: 8}, ops: []op{call(0, "a", "f"), args(0, `{"a":`), args(0, `"bc"}`)},
			limit: assemble.LimitArgumentBytes},
		{name: "an arguments object over the limit", limits: assemble.Limits{ArgumentBytes: 8}, ops: []op{call(0, "a", "f"), argsObject(0, `{"a":"bcd"}`)},
			limit: assemble.LimitArgumentBytes},
		// 96 for the call, 1 for its id, 1 for its name, 9 for {"a":1}
		// escaped, 4 for the finish: 111.
		{name: "message at its limit", limits: assemble.Limits{MessageBytes: 111}, ops: []op{call(0, "a", "f"), args(0, `{"a":1}`), finish("stop"), terminal()}},
		{name: "message over its limit", limits: assemble.Limits{MessageBytes: 110}, ops: []op{call(0, "a", "f"), args(0, `{"a":1}`), finish("stop"), terminal()},
			limit: assemble.LimitMessageBytes},
		{name: "message counts escapes", limits: assemble.Limits{TextBytes: 100, MessageBytes: 59}, ops: []op{text(0, strings.Repeat("\x01", 10))},
			limit: assemble.LimitMessageBytes},
		{name: "a repeated finish is counted once", limits: assemble.Limits{MessageBytes: 10}, ops: []op{text(0, "ab"), finish("stop"), finish("stop"), finish("length"), finish("stop"), terminal()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := limited(tt.limits, tt.ops...)
			if got := limitOf(t, a); got != tt.limit {
				t.Fatalf("Err() limit = %q (%v); want %q", got, a.Err(), tt.limit)
			}
			if tt.limit == "" && !a.Reached() {
				t.Errorf("Reached() = false; want the terminal of an answer within the limits")
			}
			if tt.check != nil {
				tt.check(t, a.Response())
			}
		})
	}
}

// TestAssemblerStopsAtALimit: after the first crossing nothing changes the
// assembler, and the first crossing is the one reported.
func TestAssemblerStopsAtALimit(t *testing.T) {
	a := limited(assemble.Limits{TextBytes: 2, ToolCalls: 1}, text(0, "abc"), call(1, "a", "f"), call(2, "b", "f"), reasoning(3, "r"), finish("stop"), terminal())
	var le *assemble.LimitError
	if !errors.As(a.Err(), &le) || le.Limit != assemble.LimitTextBytes || le.Max != 2 {
		t.Fatalf("Err() = %v; want the text limit of 2", a.Err())
	}
	r := a.Response()
	if r.Text != "" || len(r.ToolCalls) != 0 || r.Reasoning != "" || r.RawFinishReason != "" || r.Terminal || a.Reached() {
		t.Errorf("Response() = %+v; want nothing after the crossing", r)
	}
	if d := a.TakeDelta(); d != nil {
		t.Errorf("TakeDelta() = %+v; want nil", d)
	}
}

// FuzzMessageBytes: the message size of a text is exactly what the record
// codec (wire.JSON) writes for it as a string, quotes aside: a limit of that
// size takes it, one byte less refuses it.
func FuzzMessageBytes(f *testing.F) {
	for _, s := range []string{"plain", `<a href="x">&amp;</a>`, "tab\tnew\nline\x00\x1f", "é\u2028\u2029", "bad \xff\xfe utf-8", "\\\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" {
			return
		}
		b, err := wire.JSON.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		size := len(b) - 2
		if size < 2 {
			return // a limit of 0 is no limit
		}
		if a := limited(assemble.Limits{MessageBytes: size}, text(0, s)); a.Err() != nil || a.Response().Text != s {
			t.Fatalf("MessageBytes %d refused %q (%d bytes as JSON): %v", size, s, size, a.Err())
		}
		if a := limited(assemble.Limits{MessageBytes: size - 1}, text(0, s)); limitOf(t, a) != assemble.LimitMessageBytes {
			t.Fatalf("MessageBytes %d took %q (%d bytes as JSON)", size-1, s, size)
		}
		if !utf8.ValidString(s) {
			return
		}
		// Split anywhere: the parts never count less than the whole.
		mid := len(s) / 2
		if a := limited(assemble.Limits{MessageBytes: size - 1}, text(0, s[:mid]), text(0, s[mid:])); a.Err() == nil {
			t.Fatalf("MessageBytes %d took %q in two fragments", size-1, s)
		}
	})
}

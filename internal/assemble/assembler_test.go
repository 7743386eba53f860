package assemble_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/pkg/wire"
)

// op is one assembler operation of a scripted test.
type op func(a *assemble.Assembler)

func text(i int, s string) op        { return func(a *assemble.Assembler) { a.Text(i, s) } }
func reasoning(i int, s string) op   { return func(a *assemble.Assembler) { a.Reasoning(i, s) } }
func call(i int, id, name string) op { return func(a *assemble.Assembler) { a.ToolCall(i, id, name) } }
func args(i int, s string) op        { return func(a *assemble.Assembler) { a.ToolArgs(i, s) } }
func argsObject(i int, raw string) op {
	return func(a *assemble.Assembler) { a.ToolArgsObject(i, []byte(raw)) }
}
func end(i int) op         { return func(a *assemble.Assembler) { a.End(i) } }
func finish(raw string) op { return func(a *assemble.Assembler) { a.Finish(raw) } }
func usage(in, out int64) op {
	return func(a *assemble.Assembler) { a.Usage(wire.Usage{InputTokens: in, OutputTokens: out}) }
}
func terminal() op { return func(a *assemble.Assembler) { a.Terminal() } }
func endAll() op   { return func(a *assemble.Assembler) { a.EndAll() } }
func run(ops ...op) *assemble.Assembler {
	a := assemble.New()
	for _, o := range ops {
		o(a)
	}
	return a
}

func TestAssemblerResponse(t *testing.T) {
	tests := []struct {
		name string
		ops  []op
		want assemble.Response
	}{
		{
			name: "text only",
			ops:  []op{text(0, "Hel"), text(0, "lo"), finish("stop"), terminal()},
			want: assemble.Response{Text: "Hello", FinishReason: wire.FinishStop, RawFinishReason: "stop", Terminal: true},
		},
		{
			name: "blocks keep insertion order, not index order",
			ops: []op{
				text(5, "first "), call(2, "c2", "b"), args(2, `{}`), text(7, "second"),
				call(1, "c1", "a"), args(1, `{"x":1}`), finish("tool_calls"), terminal(),
			},
			want: assemble.Response{
				Text: "first second",
				ToolCalls: []assemble.ToolCall{
					{Index: 2, ProviderID: "c2", Name: "b", Arguments: `{}`, Complete: true},
					{Index: 1, ProviderID: "c1", Name: "a", Arguments: `{"x":1}`, Complete: true},
				},
				FinishReason: wire.FinishToolCalls, RawFinishReason: "tool_calls", Terminal: true,
			},
		},
		{
			name: "reasoning text and several tool calls interleave",
			ops: []op{
				reasoning(0, "think "), text(1, "Let me "), reasoning(0, "more"),
				call(2, "a", "read"), call(3, "b", "grep"),
				args(2, `{"path":"sr`), args(3, `{"query":`), text(1, "check."),
				args(2, `c/"}`), args(3, `"parser"}`), finish("tool_calls"), terminal(),
			},
			want: assemble.Response{
				Text: "Let me check.", Reasoning: "think more",
				ToolCalls: []assemble.ToolCall{
					{Index: 2, ProviderID: "a", Name: "read", Arguments: `{"path":"src/"}`, Complete: true},
					{Index: 3, ProviderID: "b", Name: "grep", Arguments: `{"query":"parser"}`, Complete: true},
				},
				FinishReason: wire.FinishToolCalls, RawFinishReason: "tool_calls", Terminal: true,
			},
		},
		{
			name: "fragments never cross identities",
			ops: []op{
				call(0, "a", "f"), args(0, `{"a":1}`),
				text(0, "leak"), reasoning(0, "leak"), // text ops on a tool-call index
				text(1, "hi"), args(1, `{"b":2}`), call(1, "x", "g"), // tool ops on a text index
				reasoning(2, "r"), text(2, "leak"), args(2, "leak"),
				terminal(),
			},
			want: assemble.Response{
				Text: "hi", Reasoning: "r",
				ToolCalls:    []assemble.ToolCall{{Index: 0, ProviderID: "a", Name: "f", Arguments: `{"a":1}`, Complete: true}},
				FinishReason: wire.FinishUnknown, Terminal: true,
			},
		},
		{
			name: "first end is authoritative",
			ops: []op{
				call(0, "a", "f"), args(0, `{"a":1}`), end(0),
				args(0, `,"b":2}`), call(0, "z", "g"), end(0), argsObject(0, `{"c":3}`),
				text(1, "one"), end(1), text(1, " two"),
				reasoning(2, "r1"), end(2), reasoning(2, "r2"),
				terminal(),
			},
			want: assemble.Response{
				Text: "one", Reasoning: "r1",
				ToolCalls:    []assemble.ToolCall{{Index: 0, ProviderID: "a", Name: "f", Arguments: `{"a":1}`, Complete: true}},
				FinishReason: wire.FinishUnknown, Terminal: true,
			},
		},
		{
			name: "id and name recorded once, never concatenated, empty never erases",
			ops: []op{
				call(0, "call_1", "get_time"), args(0, `{"tz":`),
				call(0, "call_1", "get_time"), args(0, `"UTC"`),
				call(0, "", ""), call(0, "other", "other"), args(0, `}`),
				finish("tool_calls"), terminal(),
			},
			want: assemble.Response{
				ToolCalls:    []assemble.ToolCall{{Index: 0, ProviderID: "call_1", Name: "get_time", Arguments: `{"tz":"UTC"}`, Complete: true}},
				FinishReason: wire.FinishToolCalls, RawFinishReason: "tool_calls", Terminal: true,
			},
		},
		{
			name: "id and name may arrive on a later fragment",
			ops:  []op{args(0, `{"a"`), call(0, "", ""), call(0, "late", ""), args(0, `:1}`), call(0, "", "f"), terminal()},
			want: assemble.Response{
				ToolCalls:    []assemble.ToolCall{{Index: 0, ProviderID: "late", Name: "f", Arguments: `{"a":1}`, Complete: true}},
				FinishReason: wire.FinishUnknown, Terminal: true,
			},
		},
		{
			name: "arguments as an object",
			ops:  []op{call(0, "a", "f"), argsObject(0, `{"x":[1,2]}`), args(0, `{"y":1}`), argsObject(0, `{"z":0}`), terminal()},
			want: assemble.Response{
				ToolCalls:    []assemble.ToolCall{{Index: 0, ProviderID: "a", Name: "f", Arguments: `{"x":[1,2]}`, Complete: true}},
				FinishReason: wire.FinishUnknown, Terminal: true,
			},
		},
		{
			name: "object arguments after string arguments are ignored",
			ops:  []op{call(0, "a", "f"), args(0, `{"s":1}`), argsObject(0, `{"o":1}`), terminal()},
			want: assemble.Response{
				ToolCalls:    []assemble.ToolCall{{Index: 0, ProviderID: "a", Name: "f", Arguments: `{"s":1}`, Complete: true}},
				FinishReason: wire.FinishUnknown, Terminal: true,
			},
		},
		{
			name: "empty arguments become {}",
			ops:  []op{call(0, "a", "f"), call(1, "b", "g"), args(1, "  "), terminal()},
			want: assemble.Response{
				ToolCalls: []assemble.ToolCall{
					{Index: 0, ProviderID: "a", Name: "f", Arguments: "{}", Complete: true},
					{Index: 1, ProviderID: "b", Name: "g", Arguments: "{}", Complete: true},
				},
				FinishReason: wire.FinishUnknown, Terminal: true,
			},
		},
		{
			name: "not terminal: nothing is complete",
			ops:  []op{call(0, "a", "f"), args(0, `{"a":1}`), end(0), finish("tool_calls")},
			want: assemble.Response{
				ToolCalls:    []assemble.ToolCall{{Index: 0, ProviderID: "a", Name: "f", Arguments: `{"a":1}`}},
				FinishReason: wire.FinishToolCalls, RawFinishReason: "tool_calls",
			},
		},
		{
			name: "ended but not terminal",
			ops:  []op{call(0, "a", "f"), args(0, `{}`), endAll()},
			want: assemble.Response{
				ToolCalls:    []assemble.ToolCall{{Index: 0, ProviderID: "a", Name: "f", Arguments: `{}`}},
				FinishReason: wire.FinishUnknown,
			},
		},
		{
			name: "unnamed call is not complete",
			ops:  []op{call(0, "a", ""), args(0, `{}`), terminal()},
			want: assemble.Response{
				ToolCalls:    []assemble.ToolCall{{Index: 0, ProviderID: "a", Arguments: `{}`}},
				FinishReason: wire.FinishUnknown, Terminal: true,
			},
		},
		{
			name: "truncated arguments are not complete",
			ops:  []op{call(0, "a", "f"), args(0, `{"path":"src/`), finish("length"), terminal()},
			want: assemble.Response{
				ToolCalls:    []assemble.ToolCall{{Index: 0, ProviderID: "a", Name: "f", Arguments: `{"path":"src/`}},
				FinishReason: wire.FinishLength, RawFinishReason: "length", Terminal: true,
			},
		},
		{
			name: "two JSON values are not complete",
			ops:  []op{call(0, "a", "f"), args(0, `{"a":1}{"b":2}`), terminal()},
			want: assemble.Response{
				ToolCalls:    []assemble.ToolCall{{Index: 0, ProviderID: "a", Name: "f", Arguments: `{"a":1}{"b":2}`}},
				FinishReason: wire.FinishUnknown, Terminal: true,
			},
		},
		{
			name: "stop with tool calls is a tool turn",
			ops:  []op{call(0, "a", "f"), args(0, `{}`), finish("stop"), terminal()},
			want: assemble.Response{
				ToolCalls:    []assemble.ToolCall{{Index: 0, ProviderID: "a", Name: "f", Arguments: `{}`, Complete: true}},
				FinishReason: wire.FinishToolCalls, RawFinishReason: "stop", Terminal: true,
			},
		},
		{
			name: "tool_calls without calls is unknown",
			ops:  []op{text(0, "hi"), finish("tool_calls"), terminal()},
			want: assemble.Response{Text: "hi", FinishReason: wire.FinishUnknown, RawFinishReason: "tool_calls", Terminal: true},
		},
		{
			name: "last non-empty finish wins, empty never clears",
			ops:  []op{text(0, "x"), finish("length"), finish(""), finish("stop"), finish(""), terminal()},
			want: assemble.Response{Text: "x", FinishReason: wire.FinishStop, RawFinishReason: "stop", Terminal: true},
		},
		{
			name: "nothing changes after terminal",
			ops: []op{
				text(0, "x"), finish("stop"), usage(1, 2), terminal(),
				text(0, "y"), text(1, "z"), reasoning(2, "r"), call(3, "c", "f"), args(3, "{}"),
				finish("length"), usage(9, 9),
			},
			want: assemble.Response{
				Text: "x", FinishReason: wire.FinishStop, RawFinishReason: "stop",
				Usage: &wire.Usage{InputTokens: 1, OutputTokens: 2}, Terminal: true,
			},
		},
		{
			name: "usage replaced by each later report",
			ops:  []op{text(0, "x"), usage(10, 1), usage(10, 5), usage(12, 7), terminal()},
			want: assemble.Response{
				Text: "x", FinishReason: wire.FinishUnknown,
				Usage: &wire.Usage{InputTokens: 12, OutputTokens: 7}, Terminal: true,
			},
		},
		{
			name: "empty fragments create nothing",
			ops:  []op{text(0, ""), reasoning(1, ""), args(2, ""), end(9), terminal()},
			want: assemble.Response{FinishReason: wire.FinishUnknown, Terminal: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := run(tt.ops...).Response()
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("Response() = %+v; want %+v", *got, tt.want)
			}
		})
	}
}

func TestAssemblerBlocks(t *testing.T) {
	a := run(text(3, "t"), call(1, "a", "f"), reasoning(2, "r"), text(1, "x"))
	for _, tc := range []struct {
		index int
		has   bool
		kind  assemble.BlockKind
		text  string
	}{
		{3, true, assemble.KindText, "t"},
		{1, true, assemble.KindToolCall, ""},
		{2, true, assemble.KindReasoning, "r"},
		{0, false, 0, ""},
	} {
		if got := a.Has(tc.index); got != tc.has {
			t.Errorf("Has(%d) = %v; want %v", tc.index, got, tc.has)
		}
		b := a.Block(tc.index)
		if !tc.has {
			if b != nil {
				t.Errorf("Block(%d) = %+v; want nil", tc.index, b)
			}
			continue
		}
		if b == nil || b.Kind != tc.kind || b.Text() != tc.text || b.Index != tc.index {
			t.Errorf("Block(%d) = %+v; want kind %d text %q", tc.index, b, tc.kind, tc.text)
		}
	}
	a.End(3)
	if !a.Block(3).Ended || a.Block(1).Ended {
		t.Errorf("after End(3): Ended = %v, %v; want true, false", a.Block(3).Ended, a.Block(1).Ended)
	}
	if a.Reached() {
		t.Errorf("Reached() = true before Terminal; want false")
	}
	a.Terminal()
	if !a.Reached() || !a.Block(1).Ended || !a.Block(2).Ended {
		t.Errorf("after Terminal: Reached %v, Ended %v %v; want all true", a.Reached(), a.Block(1).Ended, a.Block(2).Ended)
	}
	a.Terminal() // idempotent
}

func TestAssemblerFinishRaw(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want string
	}{
		{"none", nil, ""},
		{"one", []string{"stop"}, "stop"},
		{"repeated", []string{"stop", "stop"}, "stop"},
		{"last wins", []string{"stop", "length"}, "length"},
		{"empty never clears", []string{"tool_calls", ""}, "tool_calls"},
		{"raw kept verbatim", []string{"MAX_TOKENS"}, "MAX_TOKENS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := assemble.New()
			for _, s := range tt.in {
				a.Finish(s)
			}
			if got := a.FinishRaw(); got != tt.want {
				t.Errorf("FinishRaw() after Finish%q = %q; want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestAssemblerTakeDelta(t *testing.T) {
	u := &wire.Usage{InputTokens: 3, OutputTokens: 4}
	tests := []struct {
		name string
		ops  []op
		want *wire.Delta
	}{
		{"nothing", nil, nil},
		{"reasoning never enters the delta", []op{reasoning(0, "secret")}, nil},
		{"empty text", []op{text(0, "")}, nil},
		{"text", []op{text(0, "a"), text(0, "b")}, &wire.Delta{Text: "ab"}},
		{"text without reasoning", []op{reasoning(0, "secret"), text(1, "visible")}, &wire.Delta{Text: "visible"}},
		{
			"tool start with name",
			[]op{call(0, "id", "f")},
			&wire.Delta{ToolCalls: []wire.ToolCallDelta{{Index: 0, Start: true, Name: "f"}}},
		},
		{
			"tool start and args in one frame",
			[]op{call(1, "id", "f"), args(1, `{"a"`), args(1, `:1}`)},
			&wire.Delta{ToolCalls: []wire.ToolCallDelta{{Index: 1, Start: true, Name: "f", Arguments: `{"a":1}`}}},
		},
		{
			"object args",
			[]op{call(0, "id", "f"), argsObject(0, `{"a":1}`)},
			&wire.Delta{ToolCalls: []wire.ToolCallDelta{{Index: 0, Start: true, Name: "f", Arguments: `{"a":1}`}}},
		},
		{
			"interleaved calls",
			[]op{call(0, "a", "f"), call(1, "b", "g"), args(0, "{"), args(1, "{"), args(1, "}")},
			&wire.Delta{ToolCalls: []wire.ToolCallDelta{
				{Index: 0, Start: true, Name: "f"}, {Index: 1, Start: true, Name: "g"},
				{Index: 0, Arguments: "{"}, {Index: 1, Arguments: "{}"},
			}},
		},
		{
			"end of a tool call",
			[]op{call(0, "a", "f"), end(0)},
			&wire.Delta{ToolCalls: []wire.ToolCallDelta{{Index: 0, Start: true, Name: "f", End: true}}},
		},
		{"end of a text block is not a delta", []op{text(0, "x"), end(0)}, &wire.Delta{Text: "x"}},
		{"finish waits for the terminal frame", []op{finish("MAX_TOKENS")}, nil},
		{"usage waits for the terminal frame", []op{usage(3, 4)}, nil},
		{
			"terminal frame carries the final finish and usage once",
			[]op{finish("MAX_TOKENS"), usage(1, 1), usage(3, 4), terminal()},
			&wire.Delta{FinishReason: wire.FinishLength, RawFinishReason: "MAX_TOKENS", Usage: u},
		},
		{
			"terminal frame carries the finish the message gets",
			[]op{call(0, "a", "f"), args(0, "{}"), run0(), finish("stop"), terminal()},
			&wire.Delta{FinishReason: wire.FinishToolCalls, RawFinishReason: "stop"},
		},
		{
			"ignored operations leave no trace",
			[]op{call(0, "a", "f"), run0(), text(0, "leak"), args(0, "late")},
			nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := run(tt.ops...)
			got := a.TakeDelta()
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("TakeDelta() = %+v; want %+v", got, tt.want)
			}
			if again := a.TakeDelta(); again != nil {
				t.Errorf("second TakeDelta() = %+v; want nil", again)
			}
		})
	}
}

// run0 ends block 0 and drops the frame so far, leaving only what follows.
func run0() op {
	return func(a *assemble.Assembler) { a.End(0); a.TakeDelta() }
}

func TestAssemblerTakeDeltaPerFrame(t *testing.T) {
	a := assemble.New()
	frames := []struct {
		ops  []op
		want *wire.Delta
	}{
		{[]op{call(0, "c1", "f")}, &wire.Delta{ToolCalls: []wire.ToolCallDelta{{Index: 0, Start: true, Name: "f"}}}},
		// Argument deltas hold back each member until it is complete, so a
		// credential never leaves in pieces (internal/redact.Stream).
		{[]op{call(0, "c1", "f"), args(0, `{"a":`)}, &wire.Delta{ToolCalls: []wire.ToolCallDelta{{Index: 0, Arguments: `{`}}}},
		{[]op{call(0, "", ""), args(0, `1}`), finish("tool_calls")}, &wire.Delta{
			ToolCalls: []wire.ToolCallDelta{{Index: 0, Arguments: `"a":1}`}},
		}},
		{[]op{usage(5, 6)}, nil},
		{[]op{terminal()}, &wire.Delta{
			ToolCalls:    []wire.ToolCallDelta{{Index: 0, End: true}},
			FinishReason: wire.FinishToolCalls, RawFinishReason: "tool_calls",
			Usage: &wire.Usage{InputTokens: 5, OutputTokens: 6},
		}},
		{[]op{text(1, "late"), finish("stop"), usage(1, 1)}, nil},
	}
	for i, f := range frames {
		for _, o := range f.ops {
			o(a)
		}
		if got := a.TakeDelta(); !reflect.DeepEqual(got, f.want) {
			t.Errorf("frame %d: TakeDelta() = %+v; want %+v", i, got, f.want)
		}
	}
}

func TestToolArgDeltasNeverCarryCredentials(t *testing.T) {
	a := assemble.New()
	a.ToolCall(0, "c1", "http_get")
	secret := "sk-proj-Abc123Def456Ghi789Jkl012Mno345"
	var deltas strings.Builder
	for _, frag := range []string{`{"headers":{"Authorization":"Bearer sk-pr`, `oj-Abc123Def456Ghi`, `789Jkl012Mno345"},"url":"https://x.example"}`} {
		a.ToolArgs(0, frag)
		if d := a.TakeDelta(); d != nil {
			for _, tc := range d.ToolCalls {
				deltas.WriteString(tc.Arguments)
			}
		}
	}
	a.Terminal()
	if d := a.TakeDelta(); d != nil {
		for _, tc := range d.ToolCalls {
			deltas.WriteString(tc.Arguments)
		}
	}
	if strings.Contains(deltas.String(), "Abc123Def456") || !strings.Contains(deltas.String(), "[REDACTED]") {
		t.Errorf("argument deltas = %q; want the credential redacted", deltas.String())
	}
	if got := a.Response().ToolCalls[0].Arguments; !strings.Contains(got, secret) {
		t.Errorf("finalized arguments = %q; want the faithful text the tool runs with", got)
	}
}

func TestResponseExecutable(t *testing.T) {
	tests := []struct {
		name string
		resp assemble.Response
		want bool
	}{
		{"terminal without calls", assemble.Response{Terminal: true, Text: "x"}, true},
		{"not terminal", assemble.Response{Text: "x"}, false},
		{"terminal, all complete", assemble.Response{Terminal: true, ToolCalls: []assemble.ToolCall{{Complete: true}, {Complete: true}}}, true},
		{"terminal, one incomplete", assemble.Response{Terminal: true, ToolCalls: []assemble.ToolCall{{Complete: true}, {}}}, false},
		{"complete calls but not terminal", assemble.Response{ToolCalls: []assemble.ToolCall{{Complete: true}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.resp.Executable(); got != tt.want {
				t.Errorf("Executable(%+v) = %v; want %v", tt.resp, got, tt.want)
			}
		})
	}
}

func TestResponseExecutableFromAssembler(t *testing.T) {
	tests := []struct {
		name string
		ops  []op
		want bool
	}{
		{"complete call", []op{call(0, "a", "f"), args(0, `{}`), terminal()}, true},
		{"parseable so far but no terminal", []op{call(0, "a", "f"), args(0, `{}`), end(0)}, false},
		{"terminal but truncated", []op{call(0, "a", "f"), args(0, `{"a":`), terminal()}, false},
		{"one good one bad", []op{call(0, "a", "f"), args(0, `{}`), call(1, "b", "g"), args(1, `[`), terminal()}, false},
		{"nameless", []op{call(0, "a", ""), args(0, `{}`), terminal()}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := run(tt.ops...).Response().Executable(); got != tt.want {
				t.Errorf("Response().Executable() = %v; want %v", got, tt.want)
			}
		})
	}
}

func TestResponseEmpty(t *testing.T) {
	tests := []struct {
		name string
		resp assemble.Response
		want bool
	}{
		{"zero", assemble.Response{}, true},
		{"finish and usage only", assemble.Response{FinishReason: wire.FinishStop, Usage: &wire.Usage{OutputTokens: 1}, Terminal: true}, true},
		{"text", assemble.Response{Text: "x"}, false},
		{"reasoning", assemble.Response{Reasoning: "x"}, false},
		{"tool call", assemble.Response{ToolCalls: []assemble.ToolCall{{}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.resp.Empty(); got != tt.want {
				t.Errorf("Empty(%+v) = %v; want %v", tt.resp, got, tt.want)
			}
		})
	}
}

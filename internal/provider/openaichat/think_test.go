package openaichat

import (
	"strings"
	"testing"
)

// split feeds chunks through a thinkSplitter and flushes it.
func split(chunks []string) (text, reasoning string) {
	var s thinkSplitter
	var tb, rb strings.Builder
	tf := func(x string) { tb.WriteString(x) }
	rf := func(x string) { rb.WriteString(x) }
	for _, c := range chunks {
		s.feed(c, tf, rf)
	}
	s.flush(tf, rf)
	return tb.String(), rb.String()
}

func TestThinkSplitter(t *testing.T) {
	tests := []struct {
		name            string
		chunks          []string
		text, reasoning string
	}{
		{"plain text", []string{"Hello", " world"}, "Hello world", ""},
		{"whole block in one chunk", []string{"<think>why</think>answer"}, "answer", "why"},
		{"newlines after the close are dropped", []string{"<think>why</think>\n\nanswer"}, "answer", "why"},
		{"newlines after the close in later chunks", []string{"<think>why</think>", "\r", "\n\n", "answer\n"}, "answer\n", "why"},
		{"leading whitespace before the open", []string{" \n\t<think>r</think>t"}, "t", "r"},
		{"open tag split", []string{"<", "th", "ink", ">r</think>t"}, "t", "r"},
		{"close tag split", []string{"<think>abc</", "thi", "nk>t"}, "t", "abc"},
		{"close tag split one byte at a time", strings.Split("<think>ab</think>cd", ""), "cd", "ab"},
		{"reasoning across chunks", []string{"<think>", "one ", "two", "</think>", "text"}, "text", "one two"},
		{"a lone < in reasoning is kept", []string{"<think>a < b", " and c</", "x</think>t"}, "t", "a < b and c</x"},
		{"text before a tag: the tag stays text", []string{"Answer: <think>no</think>"}, "Answer: <think>no</think>", ""},
		{"a literal tag after the block stays text", []string{"<think>r</think>use <think> and </think> tags"}, "use <think> and </think> tags", "r"},
		{"prefix that is not a tag", []string{"<th", "ing>"}, "<thing>", ""},
		{"a < that is not a tag", []string{"<", "b>bold</b>"}, "<b>bold</b>", ""},
		{"stream ends on a partial open tag", []string{"<thi"}, "<thi", ""},
		{"stream ends inside reasoning", []string{"<think>unfinished"}, "", "unfinished"},
		{"stream ends on a partial close tag", []string{"<think>r</thi"}, "", "r</thi"},
		{"only whitespace", []string{"\n", "  "}, "\n  ", ""},
		{"whitespace then text", []string{"\n", "hi"}, "\nhi", ""},
		{"empty chunks", []string{"", "<think>", "", "r", "", "</think>", "", "t"}, "t", "r"},
		{"empty block", []string{"<think></think>t"}, "t", ""},
		{"no text after the block", []string{"<think>r</think>"}, "", "r"},
		{"utf-8 around tags", []string{"<think>é", "è</think>ü"}, "ü", "éè"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, reasoning := split(tt.chunks)
			if text != tt.text || reasoning != tt.reasoning {
				t.Errorf("split(%q) = text %q, reasoning %q; want text %q, reasoning %q", tt.chunks, text, reasoning, tt.text, tt.reasoning)
			}
		})
	}
}

// TestThinkSplitterConservesBytes: whatever the chunking, every byte of the
// input ends in text or reasoning except the tags and the whitespace the
// splitter documents dropping.
func TestThinkSplitterChunkingInvariant(t *testing.T) {
	inputs := []string{
		"<think>alpha beta</think>gamma",
		"  <think>x</think>\r\ny",
		"plain <think> text",
		"<think>a</thi</think>b",
	}
	for _, in := range inputs {
		wantText, wantReasoning := split([]string{in})
		for size := 1; size <= len(in); size++ {
			var chunks []string
			for i := 0; i < len(in); i += size {
				chunks = append(chunks, in[i:min(i+size, len(in))])
			}
			text, reasoning := split(chunks)
			if text != wantText || reasoning != wantReasoning {
				t.Errorf("split(%q in %d-byte chunks) = %q, %q; want %q, %q", in, size, text, reasoning, wantText, wantReasoning)
			}
		}
	}
}

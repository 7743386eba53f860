package mockllm_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/mockllm"
)

// framesAsEvents turns builder frames into events, as a client would see them.
func framesAsEvents(fs []mockllm.Frame) []event {
	var out []event
	for _, f := range fs {
		out = append(out, event{name: f.Event, data: f.Data})
	}
	return out
}

func TestStreamBuilderChunks(t *testing.T) {
	calls := []mockllm.Call{
		{ID: "call_a", Name: "read_file", Arguments: `{"path":"C:\\src\\main.go","note":"say \"hi\""}`},
		{ID: "call_b", Name: "search", Arguments: `{"query":"café ☕ 日本","n":3}`},
		{ID: "call_c", Name: "now", Arguments: ""},
	}
	tests := []struct {
		name  string
		split int
	}{
		{"split 1", 1},
		{"split 2", 2},
		{"split 7", 7},
		{"no split", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mockllm.NewStream("mock-test").
				Reasoning("reasoning_content", "Think about it. ").
				Text("Hello  there, world. ").
				ToolCalls(tt.split, calls...).
				Finish("tool_calls").
				Usage(12, 34)
			got := accumulate(t, framesAsEvents(s.Frames()))
			if got.text != "Hello  there, world. " {
				t.Errorf("accumulated text = %q; want %q", got.text, "Hello  there, world. ")
			}
			if got.reasoning != "Think about it. " {
				t.Errorf("accumulated reasoning = %q; want %q", got.reasoning, "Think about it. ")
			}
			if len(got.calls) != len(calls) {
				t.Fatalf("accumulated %d tool calls; want %d", len(got.calls), len(calls))
			}
			for i, c := range got.calls {
				if c.ID != calls[i].ID || c.Function.Name != calls[i].Name || c.Function.Arguments != calls[i].Arguments {
					t.Errorf("call %d = {%s %s %s}; want {%s %s %s}", i, c.ID, c.Function.Name, c.Function.Arguments, calls[i].ID, calls[i].Name, calls[i].Arguments)
				}
			}
			if got.finish != "tool_calls" {
				t.Errorf("finish = %q; want tool_calls", got.finish)
			}
			if got.usage.PromptTokens != 12 || got.usage.CompletionTokens != 34 || got.usage.TotalTokens != 46 {
				t.Errorf("usage = %+v; want 12/34/46", got.usage)
			}
		})
	}
}

// TestStreamBuilderSplit: argument pieces respect the split size, and
// parallel calls interleave.
func TestStreamBuilderSplit(t *testing.T) {
	s := mockllm.NewStream("m").ToolCalls(3,
		mockllm.Call{ID: "a", Name: "f", Arguments: `{"x":1}`},
		mockllm.Call{ID: "b", Name: "g", Arguments: `{"y":22}`},
	)
	var order []int
	for _, f := range s.Frames()[1:] { // the first frame carries the role
		var c struct {
			Choices []struct {
				Delta struct {
					ToolCalls []struct {
						Index    int `json:"index"`
						Function struct {
							Name      *string `json:"name"`
							Arguments string  `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(f.Data), &c); err != nil {
			t.Fatal(err)
		}
		for _, tc := range c.Choices[0].Delta.ToolCalls {
			if tc.Function.Name != nil {
				continue // a call's first fragment
			}
			if len(tc.Function.Arguments) > 3 {
				t.Errorf("fragment %q is longer than the split 3", tc.Function.Arguments)
			}
			order = append(order, tc.Index)
		}
	}
	if want := []int{0, 1, 0, 1, 0, 1}; !reflect.DeepEqual(order, want) {
		t.Errorf("argument fragments by call = %v; want %v (interleaved)", order, want)
	}
}

func TestStreamResponse(t *testing.T) {
	s := mockllm.NewStream("m").Text("x")
	r := s.Response()
	if !r.Done || r.Status != 0 || len(r.Frames) != len(s.Frames()) {
		t.Errorf("Response() = %+v; want Done, default status and every frame", r)
	}
	s.Text("more")
	if len(r.Frames) == len(s.Frames()) {
		t.Errorf("Response().Frames changed with the builder; want a copy")
	}
}

func TestWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"one", []string{"one"}},
		{"one two", []string{"one ", "two"}},
		{"a  b ", []string{"a  ", "b "}},
		{" lead", []string{" ", "lead"}},
	}
	for _, tt := range tests {
		got := mockllm.Words(tt.in)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Words(%q) = %q; want %q", tt.in, got, tt.want)
		}
		if strings.Join(got, "") != tt.in {
			t.Errorf("strings.Join(Words(%q)) = %q; want the input", tt.in, strings.Join(got, ""))
		}
	}
}

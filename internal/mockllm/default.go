package mockllm

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

// DefaultOptions tune the default behaviour.
type DefaultOptions struct {
	// Model is reported in chunks. Default "mock-1".
	Model string
	// Latency is waited before each frame. Default 0.
	Latency time.Duration
	// Split cuts tool-call arguments into pieces of this many bytes. Default 7.
	Split int
	// MaxTools caps how many offered tools one answer calls. Default 4.
	MaxTools int
}

// Default answers like a small, helpful model:
//   - tools offered and the last message from the user: it calls the offered
//     tools in parallel, arguments split across chunks, with arguments taken
//     from each schema's defaults and examples, or from the user's words;
//   - the last message a tool result: it answers with text that reports each
//     result since its last tool call;
//   - otherwise it answers with text.
//
// Every answer ends with a usage chunk and [DONE]. A Responses request
// (/v1/responses) gets the same answers in the Responses shape, ending with
// response.completed; an Anthropic Messages request (/v1/messages) in the
// Messages shape, ending with message_stop, with signed thinking first when
// it asks for thinking.
func Default(o DefaultOptions) Script {
	if o.Model == "" {
		o.Model = "mock-1"
	}
	if o.Split <= 0 {
		o.Split = 7
	}
	if o.MaxTools <= 0 {
		o.MaxTools = 4
	}
	var calls atomic.Int64
	return ScriptFunc(func(req *Request) *Response {
		switch {
		case req.IsResponses():
			return defaultResponses(o, req, &calls)
		case req.IsMessages():
			return defaultMessages(o, req, &calls)
		}
		s := NewStream(o.Model)
		last := req.LastMessage()
		prompt := estimateTokens(req)
		switch {
		case len(req.Tools) > 0 && last.Role == "user":
			cs := defaultCalls(o, req.Tools, last.Text(), "call_mock", &calls)
			s.Text("Let me check. ").ToolCalls(o.Split, cs...).Finish("tool_calls").Usage(prompt, 20*len(cs))
		case last.Role == "tool":
			text := answerFromResults(req)
			s.Text(text).Finish("stop").Usage(prompt, len(Words(text)))
		default:
			text := "Hello from the mock provider. You said: " + clip(last.Text(), 200)
			s.Text(text).Finish("stop").Usage(prompt, len(Words(text)))
		}
		r := s.Response()
		r.Latency = o.Latency
		return r
	})
}

// defaultCalls is a call of each offered tool, up to MaxTools, its id
// prefix and a number counted by calls, its arguments from the tool's
// schema and the user's words.
func defaultCalls(o DefaultOptions, tools []Tool, userText, prefix string, calls *atomic.Int64) []Call {
	var cs []Call
	for i, t := range tools {
		if i == o.MaxTools {
			break
		}
		cs = append(cs, Call{
			ID:        fmt.Sprintf("%s%019d", prefix, calls.Add(1)),
			Name:      t.Function.Name,
			Arguments: argumentsFor(t.Function.Parameters, userText),
		})
	}
	return cs
}

// answerFromResults reports the tool results after the last assistant
// message that called tools.
func answerFromResults(req *Request) string {
	names := map[string]string{}
	start := 0
	for i, m := range req.Messages {
		if m.Role == "assistant" && len(m.ToolCalls) > 0 {
			start = i + 1
			for _, c := range m.ToolCalls {
				names[c.ID] = c.Function.Name
			}
		}
	}
	var parts []string
	for _, m := range req.Messages[start:] {
		if m.Role != "tool" {
			continue
		}
		name := names[m.ToolCallID]
		if name == "" {
			name = "a tool"
		}
		parts = append(parts, fmt.Sprintf("%s said %q", name, clip(m.Text(), 200)))
	}
	if len(parts) == 0 {
		return "I have no tool results to report."
	}
	return "Here is what I found: " + strings.Join(parts, "; ") + "."
}

var arithmetic = regexp.MustCompile(`[-(]*\d+(?:\.\d+)?(?:\s*[-+*/%^]\s*[(]*\s*\d+(?:\.\d+)?\s*[)]*)+`)

// argumentsFor builds arguments for a tool's schema: each property takes
// its default, else its first example, else (for strings) something from
// the user's words, else a zero value.
func argumentsFor(schema map[string]any, userText string) string {
	props, _ := schema["properties"].(map[string]any)
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	args := make(map[string]any, len(keys))
	for _, k := range keys {
		p, _ := props[k].(map[string]any)
		if v, ok := p["default"]; ok {
			args[k] = v
			continue
		}
		if ex, ok := p["examples"].([]any); ok && len(ex) > 0 {
			if typ, _ := p["type"].(string); typ == "string" {
				if m := arithmetic.FindString(userText); m != "" && strings.Contains(strings.ToLower(k), "expr") {
					args[k] = strings.TrimSpace(m)
					continue
				}
			}
			args[k] = ex[0]
			continue
		}
		switch typ, _ := p["type"].(string); typ {
		case "string":
			if m := arithmetic.FindString(userText); m != "" && strings.Contains(strings.ToLower(k), "expr") {
				args[k] = strings.TrimSpace(m)
			} else {
				args[k] = clip(userText, 64)
			}
		case "integer", "number":
			args[k] = 0
		case "boolean":
			args[k] = false
		case "array":
			args[k] = []any{}
		case "object":
			args[k] = map[string]any{}
		}
	}
	b, _ := json.Marshal(args) // values from JSON: cannot fail
	return string(b)
}

func estimateTokens(req *Request) int {
	return len(req.Body)/4 + 1
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

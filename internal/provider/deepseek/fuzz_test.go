package deepseek

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/providertest"
	"github.com/turnstream/turnstream/pkg/wire"
)

// source hands out fuzz bytes as request parts; exhausted, it gives zeros.
type source struct{ b []byte }

func (s *source) byte() byte {
	if len(s.b) == 0 {
		return 0
	}
	c := s.b[0]
	s.b = s.b[1:]
	return c
}

func (s *source) string() string {
	n := min(int(s.byte()%24), len(s.b))
	out := string(s.b[:n])
	s.b = s.b[n:]
	return out
}

// fuzzRequest builds a request from data: any roles (rarely an unknown
// one), tool calls and results, echoes nil, empty or set, rarely images.
func fuzzRequest(data []byte) (*provider.Request, provider.Model) {
	s := &source{b: data}
	model := plain
	if s.byte()&1 == 1 {
		model = thinking
	}
	req := &provider.Request{System: s.string()}
	for range int(s.byte() % 3) {
		t := wire.Tool{Name: s.string(), Description: s.string()}
		if s.byte()&1 == 1 {
			t.Parameters = map[string]any{"type": "object", "properties": map[string]any{s.string(): map[string]any{"type": "string"}}}
		}
		req.Tools = append(req.Tools, t)
	}
	for range int(s.byte() % 12) {
		m := provider.Message{Content: s.string()}
		switch r := s.byte() % 16; {
		case r < 5:
			m.Role = wire.RoleUser
		case r < 9:
			m.Role = wire.RoleAssistant
			for range int(s.byte() % 4) {
				m.ToolCalls = append(m.ToolCalls, wire.Call{ID: s.string(), Name: s.string(), Arguments: s.string()})
			}
		case r < 12:
			m.Role, m.ToolCallID = wire.RoleTool, s.string()
		case r < 13:
			m.Role, m.ToolCallID = wire.RoleUser, "call_"+s.string()
		case r < 15:
			m.Role = wire.RoleSystem
		default:
			m.Role = wire.Role(s.string())
		}
		flags := s.byte()
		if flags&1 == 1 {
			m.Reasoning = new(string)
			if flags&2 == 2 {
				*m.Reasoning = s.string()
			}
		}
		if flags&0x1c == 0x1c {
			m.Images = []string{s.string()}
		}
		req.Messages = append(req.Messages, m)
	}
	return req, model
}

// wireMessage is a request message with its fields kept raw, so presence
// can be checked.
type wireMessage map[string]json.RawMessage

func (m wireMessage) role() string {
	var r string
	_ = json.Unmarshal(m["role"], &r)
	return r
}

// FuzzPrepare: for any request Prepare never panics, fails only with an
// INVALID_REQUEST for images (checked first) or an unknown role, and
// otherwise writes deterministic, valid JSON in DeepSeek's shape, with
// reasoning_content only on tool-call turns of a model that needs it.
func FuzzPrepare(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x01\x05system\x01\x03get\x00\x01\x04\x04user\x00\x00\x03hi!\x05\x02\x01\x09\x03abc\x01\x02{}\x03\x00\x02ok\x0a\x03abc\x00"))
	f.Add([]byte("\x01\x00\x00\x06\x01a\x00\x00\x01b\x01\x00\x00\x05\x01\x01c\x01d\x02{}\x03\x03why\x00\x0f\x00\x1f"))
	f.Add([]byte("\x00\x02sy\x00\x08\x03sys\x0d\x00\x00u\x01\x00\x01t\x0c\x02id\x00\x01a\x07\x00\x00\x01x\x0f\x02zz\x00"))
	a := newAdapter(f, "http://127.0.0.1:1", Options{})
	f.Fuzz(func(t *testing.T, data []byte) {
		req, model := fuzzRequest(data)
		body, err := a.Prepare(req, model)

		images, unknown := false, false
		system := req.System
		var echoes, assistants, tools int
		for _, m := range req.Messages {
			images = images || len(m.Images) > 0
			switch {
			case m.Role == wire.RoleSystem:
				system = join(system, m.Content)
			case m.Role == wire.RoleAssistant:
				assistants++
				if model.Capabilities.ReasoningEcho && len(m.ToolCalls) > 0 && m.Reasoning != nil {
					echoes++
				}
			case m.Role == wire.RoleTool, m.Role == wire.RoleUser && m.ToolCallID != "":
				tools++
			case m.Role != wire.RoleUser:
				unknown = true
			}
		}
		if err != nil {
			var fl *provider.Failure
			if body != nil || !errors.As(err, &fl) || fl.Class != provider.ClassInvalidRequest {
				t.Fatalf("Prepare() = %q, %v; want no body and an INVALID_REQUEST failure", body, err)
			}
			if images && !errors.Is(err, ErrImages) || !images && !(unknown && errors.Is(err, ErrRole)) {
				t.Fatalf("Prepare() error = %v; images %v, unknown role %v", err, images, unknown)
			}
			return
		}
		if images || unknown {
			t.Fatalf("Prepare() error = nil; want a rejection (images %v, unknown role %v)", images, unknown)
		}
		if again, _ := a.Prepare(req, model); !bytes.Equal(again, body) {
			t.Fatalf("Prepare() is not deterministic:\n%s\n%s", body, again)
		}
		var got struct {
			Model    string        `json:"model"`
			Stream   bool          `json:"stream"`
			Messages []wireMessage `json:"messages"`
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("Prepare() body is not JSON: %v\n%s", err, body)
		}
		if got.Model != model.Name || !got.Stream {
			t.Fatalf("Prepare() model, stream = %q, %v; want %q, true", got.Model, got.Stream, model.Name)
		}
		var gotEchoes, gotAssistants, gotTools int
		for i, m := range got.Messages {
			role := m.role()
			_, hasCalls := m["tool_calls"]
			_, hasEcho := m["reasoning_content"]
			switch {
			case role == "system" && i != 0:
				t.Fatalf("message %d is a system message; only the first may be", i)
			case role == "user" && i > 0 && got.Messages[i-1].role() == "user":
				t.Fatalf("messages %d and %d are both user messages; want them joined", i-1, i)
			case hasEcho && (role != "assistant" || !hasCalls || !model.Capabilities.ReasoningEcho):
				t.Fatalf("message %d (%s, tool calls %v) carries reasoning_content", i, role, hasCalls)
			case bytes.Equal(m["content"], []byte("null")) && (role != "assistant" || !hasCalls):
				t.Fatalf("message %d (%s) has null content without tool calls", i, role)
			}
			if hasEcho {
				gotEchoes++
			}
			switch role {
			case "assistant":
				gotAssistants++
			case "tool":
				gotTools++
			}
		}
		if hasSystem := len(got.Messages) > 0 && got.Messages[0].role() == "system"; hasSystem != (system != "") {
			t.Fatalf("system message present = %v; want %v", hasSystem, system != "")
		}
		if gotEchoes != echoes || gotAssistants != assistants || gotTools != tools {
			t.Fatalf("echoes, assistants, tool results = %d, %d, %d; want %d, %d, %d", gotEchoes, gotAssistants, gotTools, echoes, assistants, tools)
		}
	})
}

// FuzzStream serves arbitrary bytes as DeepSeek's event stream, through
// the real adapter over HTTP: no panic, a response only after [DONE], no
// reasoning in visible deltas, no complete call without a name and JSON
// arguments.
func FuzzStream(f *testing.F) {
	for _, b := range providertest.Fixtures(f, filepath.Join("testdata", "streams", "*.sse")) {
		f.Add(b)
	}
	f.Add([]byte(": keep-alive\n\ndata: [DONE]\n"))
	// The server streams back whatever it is sent: the fuzz input is the body.
	srv := providertest.Start(f, providertest.Echo("x-ds-trace-id", traceID))
	a := newAdapter(f, srv.URL, Options{IdleTimeout: 10 * time.Second})
	f.Fuzz(func(t *testing.T, data []byte) {
		o := providertest.Stream(t, a, data)
		if o.Err != nil {
			if f := o.Failure(); f.RequestID != traceID {
				t.Fatalf("Failure.RequestID = %q; want %q", f.RequestID, traceID)
			}
			return
		}
		r := o.Resp
		if !r.Terminal || !bytes.Contains(data, []byte("[DONE]")) {
			t.Fatalf("Stream() response without [DONE]: terminal %v", r.Terminal)
		}
		if got := o.DeltaText(); got != r.Text {
			t.Fatalf("relayed text %q != response text %q", got, r.Text)
		}
		for _, c := range r.ToolCalls {
			if c.Complete && (c.Name == "" || !json.Valid([]byte(c.Arguments))) {
				t.Fatalf("complete call %+v has no name or invalid arguments", c)
			}
		}
	})
}

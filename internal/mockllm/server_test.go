package mockllm_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/mockllm"
)

type tool struct {
	name   string
	params map[string]any
}

func toolsJSON(ts ...tool) []any {
	var out []any
	for _, t := range ts {
		out = append(out, map[string]any{"type": "function", "function": map[string]any{"name": t.name, "parameters": t.params}})
	}
	return out
}

func obj(props map[string]any) map[string]any {
	return map[string]any{"type": "object", "properties": props}
}

func TestDefaultToolCalls(t *testing.T) {
	tools := []tool{
		{"get_time", obj(map[string]any{"tz": map[string]any{"type": "string", "default": "UTC"}})},
		{"calc", obj(map[string]any{"expression": map[string]any{"type": "string", "examples": []any{"1+1"}}})},
		{"search", obj(map[string]any{
			"query": map[string]any{"type": "string", "examples": []any{"golang", "nats"}},
			"limit": map[string]any{"type": "integer"},
			"exact": map[string]any{"type": "boolean"},
			"tags":  map[string]any{"type": "array"},
			"opts":  map[string]any{"type": "object"},
		})},
		{"echo", obj(map[string]any{"text": map[string]any{"type": "string"}, "expr_text": map[string]any{"type": "string"}})},
		{"fifth", obj(nil)},
	}
	const prompt = `Qu'est-ce que (2 + 3) * 4.5 ? Réponds vite ☕ "merci"`
	tests := []struct {
		name  string
		opts  mockllm.DefaultOptions
		names []string
		args  []string
	}{
		{
			name:  "defaults, examples, expression, user words, zero values; capped at 4",
			names: []string{"get_time", "calc", "search", "echo"},
			args: []string{
				`{"tz":"UTC"}`,
				`{"expression":"(2 + 3) * 4.5"}`,
				`{"exact":false,"limit":0,"opts":{},"query":"golang","tags":[]}`,
				mustJSON(t, map[string]any{"text": prompt, "expr_text": "(2 + 3) * 4.5"}),
			},
		},
		{
			name:  "one tool, split 1",
			opts:  mockllm.DefaultOptions{MaxTools: 1, Split: 1},
			names: []string{"get_time"},
			args:  []string{`{"tz":"UTC"}`},
		},
		{
			name:  "split 2",
			opts:  mockllm.DefaultOptions{Split: 2},
			names: []string{"get_time", "calc", "search", "echo"},
			args: []string{
				`{"tz":"UTC"}`,
				`{"expression":"(2 + 3) * 4.5"}`,
				`{"exact":false,"limit":0,"opts":{},"query":"golang","tags":[]}`,
				mustJSON(t, map[string]any{"text": prompt, "expr_text": "(2 + 3) * 4.5"}),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := start(t, mockllm.New(mockllm.Default(tt.opts)))
			body := mustJSON(t, map[string]any{
				"model": "mock-1", "stream": true,
				"messages": []any{map[string]any{"role": "system", "content": "s"}, map[string]any{"role": "user", "content": prompt}},
				"tools":    toolsJSON(tools...),
			})
			res := post(t, srv, "/v1/chat/completions", body)
			if res.status != http.StatusOK || res.readErr != nil {
				t.Fatalf("POST = %d, %v; want 200", res.status, res.readErr)
			}
			events, _ := parseSSE(res.body)
			got := accumulate(t, events)
			if !got.done {
				t.Errorf("stream has no [DONE]")
			}
			if got.finish != "tool_calls" {
				t.Errorf("finish = %q; want tool_calls", got.finish)
			}
			if len(got.calls) != len(tt.names) {
				t.Fatalf("got %d calls; want %d", len(got.calls), len(tt.names))
			}
			ids := map[string]bool{}
			for i, c := range got.calls {
				if c.Function.Name != tt.names[i] {
					t.Errorf("call %d name = %q; want %q", i, c.Function.Name, tt.names[i])
				}
				if !json.Valid([]byte(c.Function.Arguments)) {
					t.Errorf("call %d arguments %q are not valid JSON", i, c.Function.Arguments)
				} else if !jsonEqual(c.Function.Arguments, tt.args[i]) {
					t.Errorf("call %d arguments = %s; want %s", i, c.Function.Arguments, tt.args[i])
				}
				if c.ID == "" || ids[c.ID] {
					t.Errorf("call %d id = %q; want a fresh non-empty id", i, c.ID)
				}
				ids[c.ID] = true
			}
			if got.usage.PromptTokens <= 0 || got.usage.CompletionTokens <= 0 {
				t.Errorf("usage = %+v; want positive counts", got.usage)
			}
		})
	}
}

func TestDefaultAnswers(t *testing.T) {
	tests := []struct {
		name     string
		messages []any
		tools    []any
		contains []string
	}{
		{
			name: "tool results",
			messages: []any{
				map[string]any{"role": "user", "content": "time?"},
				map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
					map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "get_time", "arguments": "{}"}},
					map[string]any{"id": "c2", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": "{}"}},
				}},
				map[string]any{"role": "tool", "tool_call_id": "c1", "content": "10:00 UTC"},
				map[string]any{"role": "tool", "tool_call_id": "c2", "content": "sunny"},
			},
			tools:    toolsJSON(tool{"get_time", obj(nil)}),
			contains: []string{`get_time said "10:00 UTC"`, `get_weather said "sunny"`},
		},
		{
			name: "only results since the last tool call",
			messages: []any{
				map[string]any{"role": "user", "content": "q"},
				map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "old", "type": "function", "function": map[string]any{"name": "first", "arguments": "{}"}}}},
				map[string]any{"role": "tool", "tool_call_id": "old", "content": "stale"},
				map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "new", "type": "function", "function": map[string]any{"name": "second", "arguments": "{}"}}}},
				map[string]any{"role": "tool", "tool_call_id": "new", "content": "fresh"},
			},
			contains: []string{`second said "fresh"`},
		},
		{
			name:     "plain text",
			messages: []any{map[string]any{"role": "user", "content": "hello mock"}},
			contains: []string{"You said: hello mock"},
		},
		{
			name:     "tools offered but last message not from the user",
			messages: []any{map[string]any{"role": "user", "content": "a"}, map[string]any{"role": "assistant", "content": "b"}},
			tools:    toolsJSON(tool{"get_time", obj(nil)}),
			contains: []string{"You said: b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := start(t, mockllm.New(nil))
			req := map[string]any{"model": "mock-1", "stream": true, "messages": tt.messages}
			if tt.tools != nil {
				req["tools"] = tt.tools
			}
			res := post(t, srv, "/v1/chat/completions", mustJSON(t, req))
			events, _ := parseSSE(res.body)
			got := accumulate(t, events)
			if len(got.calls) != 0 || got.finish != "stop" || !got.done {
				t.Errorf("answer = %d calls, finish %q, done %v; want text only, stop, done", len(got.calls), got.finish, got.done)
			}
			for _, s := range tt.contains {
				if !strings.Contains(got.text, s) {
					t.Errorf("text = %q; want it to contain %q", got.text, s)
				}
			}
			if strings.Contains(got.text, "stale") {
				t.Errorf("text = %q; want no result from before the last tool call", got.text)
			}
		})
	}
}

func TestQueue(t *testing.T) {
	srv := start(t, mockllm.New(mockllm.Queue(
		mockllm.NewStream("m").Text("first").Finish("stop").Response(),
		mockllm.Error(http.StatusTooManyRequests, "rate_limit_exceeded", "slow down", nil),
	)))
	body := `{"model":"m","messages":[{"role":"user","content":"x"}]}`
	r1 := post(t, srv, "/v1/chat/completions", body)
	if r1.status != http.StatusOK || !bytes.Contains(r1.body, []byte(`"first"`)) {
		t.Errorf("request 1 = %d %s; want 200 with the first response", r1.status, r1.body)
	}
	if r2 := post(t, srv, "/v1/chat/completions", body); r2.status != http.StatusTooManyRequests {
		t.Errorf("request 2 status = %d; want 429", r2.status)
	}
	for i := 3; i <= 4; i++ {
		r := post(t, srv, "/v1/chat/completions", body)
		if r.status != http.StatusInternalServerError || !bytes.Contains(r.body, []byte("script exhausted")) {
			t.Errorf("request %d = %d %s; want 500 script exhausted", i, r.status, r.body)
		}
	}
}

func TestError(t *testing.T) {
	h := http.Header{}
	h.Set("Retry-After", "2")
	h.Set("X-Request-Id", "req_e")
	srv := start(t, mockllm.New(mockllm.Queue(mockllm.Error(http.StatusTooManyRequests, "rate_limit_exceeded", `Rate limit "reached"`, h))))
	res := post(t, srv, "/v1/chat/completions", `{"messages":[]}`)
	if res.status != http.StatusTooManyRequests {
		t.Errorf("status = %d; want 429", res.status)
	}
	if ct := res.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q; want application/json", ct)
	}
	if res.header.Get("Retry-After") != "2" || res.header.Get("X-Request-Id") != "req_e" {
		t.Errorf("headers = %v; want Retry-After and X-Request-Id from the response", res.header)
	}
	var e struct {
		Error struct {
			Message, Type, Code string
		} `json:"error"`
	}
	if err := json.Unmarshal(res.body, &e); err != nil {
		t.Fatalf("body %s: %v", res.body, err)
	}
	if e.Error.Message != `Rate limit "reached"` || e.Error.Type != "rate_limit_exceeded" || e.Error.Code != "rate_limit_exceeded" {
		t.Errorf("error body = %+v; want message, type and code", e.Error)
	}
}

func TestForgetRequests(t *testing.T) {
	s := mockllm.New(mockllm.ScriptFunc(func(*mockllm.Request) *mockllm.Response {
		return mockllm.NewStream("m").Text("ok").Finish("stop").Response()
	}))
	srv := start(t, s)
	body := `{"model":"a","messages":[{"role":"user","content":"hi"}],"stream":true}`
	post(t, srv, "/v1/chat/completions", body)
	s.ForgetRequests()
	if got := post(t, srv, "/v1/chat/completions", body); got.status != http.StatusOK {
		t.Fatalf("status after ForgetRequests = %d; want 200", got.status)
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("len(Requests()) = %d; want 1, the request before ForgetRequests", n)
	}
}

func TestRequestsRecorded(t *testing.T) {
	s := mockllm.New(mockllm.ScriptFunc(func(*mockllm.Request) *mockllm.Response {
		return mockllm.NewStream("m").Text("ok").Finish("stop").Response()
	}))
	srv := start(t, s)
	bodies := []string{
		"{ \"model\" : \"a\",\n\"messages\":[{\"role\":\"user\",\"content\":\"caf\\u00e9\"}], \"stream\": true, \"extra\": [1, 2.50] }",
		`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}],"model":"b","tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`,
	}
	paths := []string{"/v1/chat/completions", "/chat/completions"}
	for i, b := range bodies {
		post(t, srv, paths[i], b)
	}
	post(t, srv, "/v1/chat/completions", "not json") // rejected: not recorded
	reqs := s.Requests()
	if len(reqs) != len(bodies) {
		t.Fatalf("len(Requests()) = %d; want %d", len(reqs), len(bodies))
	}
	for i, r := range reqs {
		if string(r.Body) != bodies[i] {
			t.Errorf("Requests()[%d].Body = %q; want %q verbatim", i, r.Body, bodies[i])
		}
		if r.Path != paths[i] {
			t.Errorf("Requests()[%d].Path = %q; want %q", i, r.Path, paths[i])
		}
	}
	if r := reqs[0]; r.Model != "a" || !r.Stream || r.LastMessage().Text() != "café" || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("Requests()[0] = model %q stream %v last %q; want a, true, café", r.Model, r.Stream, r.LastMessage().Text())
	}
	r := reqs[1]
	if r.Model != "b" || len(r.Tools) != 1 || r.Tools[0].Function.Name != "f" || r.Messages[0].Content != nil ||
		r.Messages[0].ToolCalls[0].ID != "c" || r.LastMessage().ToolCallID != "c" {
		t.Errorf("Requests()[1] = %+v; want parsed tools, a null content and tool_call_id", r)
	}
	// Requests returns a copy.
	reqs[0] = nil
	if s.Requests()[0] == nil {
		t.Errorf("Requests() shares its slice with the server")
	}
}

func TestServerRoutes(t *testing.T) {
	srv := start(t, mockllm.New(nil))
	tests := []struct {
		name   string
		method string
		path   string
		body   string
		status int
	}{
		{"models", http.MethodGet, "/v1/models", "", http.StatusOK},
		{"models without prefix", http.MethodGet, "/models", "", http.StatusOK},
		{"unknown path", http.MethodPost, "/v1/completions", "{}", http.StatusNotFound},
		{"GET completions", http.MethodGet, "/v1/chat/completions", "", http.StatusMethodNotAllowed},
		{"bad body", http.MethodPost, "/v1/chat/completions", "[", http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), tt.method, srv.URL+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != tt.status {
				t.Errorf("%s %s = %d; want %d", tt.method, tt.path, res.StatusCode, tt.status)
			}
		})
	}
}

func TestFaults(t *testing.T) {
	frames := mockllm.NewStream("m").Text("one two three").Finish("stop").Frames() // role + 3 words + finish
	dataCount := func(t *testing.T, body []byte) int {
		t.Helper()
		events, _ := parseSSE(body)
		return len(events)
	}
	t.Run("DisconnectAfter", func(t *testing.T) {
		srv := start(t, mockllm.New(mockllm.Queue(&mockllm.Response{Frames: frames, Done: true, DisconnectAfter: 2})))
		res := post(t, srv, "/v1/chat/completions", `{}`)
		if res.readErr == nil {
			t.Errorf("reading the body: err = nil; want a broken connection")
		}
		if n := dataCount(t, res.body); n != 2 {
			t.Errorf("events before the disconnect = %d; want 2", n)
		}
		if bytes.Contains(res.body, []byte("[DONE]")) {
			t.Errorf("body has [DONE] after a disconnect")
		}
	})
	t.Run("DisconnectAfter every frame", func(t *testing.T) {
		srv := start(t, mockllm.New(mockllm.Queue(&mockllm.Response{Frames: frames, Done: true, DisconnectAfter: len(frames)})))
		res := post(t, srv, "/v1/chat/completions", `{}`)
		if res.readErr == nil {
			t.Errorf("reading the body: err = nil; want a broken connection")
		}
		if n := dataCount(t, res.body); n != len(frames) {
			t.Errorf("events before the disconnect = %d; want %d", n, len(frames))
		}
		if bytes.Contains(res.body, []byte("[DONE]")) {
			t.Errorf("body has [DONE] after a disconnect")
		}
	})
	t.Run("Stall", func(t *testing.T) {
		srv := start(t, mockllm.New(mockllm.Queue(&mockllm.Response{Frames: frames, Done: true, Stall: 30 * time.Millisecond})))
		res := post(t, srv, "/v1/chat/completions", `{}`)
		if res.readErr != nil {
			t.Fatal(res.readErr)
		}
		first := bytes.Index(res.body, []byte("data:"))
		if first < 0 || !bytes.HasPrefix(res.body, []byte(": keep-alive\n\n")) {
			t.Fatalf("body = %q; want keep-alive comments before the first frame", res.body)
		}
		if bytes.Contains(res.body[first:], []byte(": keep-alive")) {
			t.Errorf("keep-alive after the first frame; want comments only before it")
		}
		if !bytes.HasSuffix(res.body, []byte("data: [DONE]\n\n")) {
			t.Errorf("body does not end with [DONE] after a stall")
		}
	})
	t.Run("DoneWithoutBlankLine", func(t *testing.T) {
		srv := start(t, mockllm.New(mockllm.Queue(&mockllm.Response{Frames: frames, Done: true, DoneWithoutBlankLine: true})))
		res := post(t, srv, "/v1/chat/completions", `{}`)
		if !bytes.HasSuffix(res.body, []byte("\n\ndata: [DONE]\n")) || bytes.HasSuffix(res.body, []byte("[DONE]\n\n")) {
			t.Errorf("body ends %q; want a single newline after data: [DONE]", res.body[max(0, len(res.body)-20):])
		}
	})
	t.Run("no Done", func(t *testing.T) {
		srv := start(t, mockllm.New(mockllm.Queue(&mockllm.Response{Frames: frames})))
		res := post(t, srv, "/v1/chat/completions", `{}`)
		if res.readErr != nil || bytes.Contains(res.body, []byte("[DONE]")) || dataCount(t, res.body) != len(frames) {
			t.Errorf("body = %q, err %v; want every frame, a clean end and no [DONE]", res.body, res.readErr)
		}
	})
	t.Run("frame kinds", func(t *testing.T) {
		srv := start(t, mockllm.New(mockllm.Queue(&mockllm.Response{Frames: []mockllm.Frame{
			{Comment: "OPENROUTER PROCESSING"},
			{Event: "error", Data: `{"error":{"message":"x"}}`},
			{Verbatim: "data: raw\n\n"},
			{Data: "plain"},
		}, Header: http.Header{"X-Custom": {"v"}}})))
		res := post(t, srv, "/v1/chat/completions", `{}`)
		want := ": OPENROUTER PROCESSING\n\nevent: error\ndata: {\"error\":{\"message\":\"x\"}}\n\ndata: raw\n\ndata: plain\n\n"
		if string(res.body) != want {
			t.Errorf("body = %q; want %q", res.body, want)
		}
		if res.header.Get("Content-Type") != "text/event-stream" || res.header.Get("X-Custom") != "v" || res.header.Get("X-Request-Id") == "" {
			t.Errorf("headers = %v; want event-stream, X-Custom and a request id", res.header)
		}
	})
	t.Run("NotStream", func(t *testing.T) {
		srv := start(t, mockllm.New(mockllm.Queue(&mockllm.Response{NotStream: true, Body: `{"error":{"message":"in a 200"}}`})))
		res := post(t, srv, "/v1/chat/completions", `{}`)
		if res.status != http.StatusOK || res.header.Get("Content-Type") != "application/json" || string(res.body) != `{"error":{"message":"in a 200"}}` {
			t.Errorf("answer = %d %q %s; want 200 application/json with the body", res.status, res.header.Get("Content-Type"), res.body)
		}
	})
	t.Run("nil response", func(t *testing.T) {
		srv := start(t, mockllm.New(mockllm.ScriptFunc(func(*mockllm.Request) *mockllm.Response { return nil })))
		if res := post(t, srv, "/v1/chat/completions", `{}`); res.status != http.StatusInternalServerError {
			t.Errorf("status = %d; want 500", res.status)
		}
	})
}

// TestSharedResponseConcurrent: a script may return the same *Response to
// concurrent requests (a load test's fixed error); serving it must not
// write to it.
func TestSharedResponseConcurrent(t *testing.T) {
	shared := []*mockllm.Response{
		{Status: 0, NotStream: true, Body: `{"ok":true}`},
		mockllm.Error(http.StatusServiceUnavailable, "overloaded", "busy", nil),
		mockllm.NewStream("m").Text("same").Finish("stop").Response(),
	}
	for _, resp := range shared {
		srv := start(t, mockllm.New(mockllm.ScriptFunc(func(*mockllm.Request) *mockllm.Response { return resp })))
		done := make(chan error, 8)
		for range cap(done) {
			go func() {
				res, err := srv.Client().Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{}`))
				if err == nil {
					_, err = io.Copy(io.Discard, res.Body)
					res.Body.Close()
				}
				done <- err
			}()
		}
		for range cap(done) {
			if err := <-done; err != nil {
				t.Errorf("POST: %v", err)
			}
		}
	}
}

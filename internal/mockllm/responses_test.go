package mockllm_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/responses"

	"github.com/turnstream/turnstream/internal/mockllm"
)

func TestResponsesStreamBuilder(t *testing.T) {
	calls := []mockllm.Call{
		{ID: "call_a", Name: "read_file", Arguments: `{"path":"C:\\src\\main.go","note":"say \"hi\""}`},
		{ID: "call_b", Name: "search", Arguments: `{"query":"café ☕ 日本","n":3}`},
		{ID: "call_c", Name: "now", Arguments: `{}`},
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
			s := mockllm.NewResponsesStream("mock-test").
				Reasoning("gAAAA-encrypted", "Think about it.", "Then act.").
				Text("Hello  there, world. ").
				FunctionCalls(tt.split, calls...).
				Usage(120, 100, 34, 10).
				Completed()
			got := accumulateResponses(t, framesAsEvents(s.Frames()))
			if got.terminal != "response.completed" || got.final == nil {
				t.Fatalf("terminal = %q; want response.completed", got.terminal)
			}
			if text := got.snapshot.OutputText(); text != "Hello  there, world. " {
				t.Errorf("snapshot text = %q; want %q", text, "Hello  there, world. ")
			}
			if text := got.final.OutputText(); text != "Hello  there, world. " {
				t.Errorf("final OutputText() = %q; want %q", text, "Hello  there, world. ")
			}
			if got.reasoning != "Think about it.Then act." {
				t.Errorf("reasoning deltas = %q; want both summaries", got.reasoning)
			}
			fcs := functionCalls(got.final)
			if len(fcs) != len(calls) {
				t.Fatalf("final has %d function calls; want %d", len(fcs), len(calls))
			}
			for i, c := range fcs {
				if c.CallID != calls[i].ID || c.Name != calls[i].Name || c.Arguments != calls[i].Arguments || !strings.HasPrefix(c.ID, "fc_") {
					t.Errorf("call %d = {%s %s %s %s}; want {fc_... %s %s %s}", i, c.ID, c.CallID, c.Name, c.Arguments, calls[i].ID, calls[i].Name, calls[i].Arguments)
				}
			}
			// The snapshot accumulates the deltas by output index: they must
			// rebuild each call's arguments exactly.
			var snapCalls []responses.ResponseAccumulatedOutput
			for _, o := range got.snapshot.Output {
				if o.Type == "function_call" {
					snapCalls = append(snapCalls, o)
				}
			}
			for i, o := range snapCalls {
				if o.Arguments != calls[i].Arguments || o.CallID != calls[i].ID {
					t.Errorf("snapshot call %d = %s %s; want %s %s", i, o.CallID, o.Arguments, calls[i].ID, calls[i].Arguments)
				}
			}
			rs := got.final.Output[0].AsReasoning()
			if got.final.Output[0].Type != "reasoning" || rs.EncryptedContent != "gAAAA-encrypted" || len(rs.Summary) != 2 {
				t.Errorf("output[0] = %s; want the reasoning item with its encrypted content and two summaries", got.final.Output[0].RawJSON())
			}
			u := got.final.Usage
			if u.InputTokens != 120 || u.InputTokensDetails.CachedTokens != 100 || u.OutputTokens != 34 || u.OutputTokensDetails.ReasoningTokens != 10 {
				t.Errorf("usage = %+v; want 120 (100 cached) in, 34 (10 reasoning) out", u)
			}
		})
	}
}

// TestResponsesStreamInterleaves: argument deltas of parallel calls take
// turns by output_index and reference the item id, never the call id.
func TestResponsesStreamInterleaves(t *testing.T) {
	s := mockllm.NewResponsesStream("m").FunctionCalls(2, mockllm.Call{ID: "call_1", Name: "a", Arguments: `{"x":1}`}, mockllm.Call{ID: "call_2", Name: "b", Arguments: `{"y":2}`})
	var order []string
	for _, f := range s.Frames() {
		if f.Event != "response.function_call_arguments.delta" {
			continue
		}
		var d struct {
			ItemID      string `json:"item_id"`
			OutputIndex int    `json:"output_index"`
			CallID      string `json:"call_id"`
		}
		if err := json.Unmarshal([]byte(f.Data), &d); err != nil {
			t.Fatal(err)
		}
		if d.CallID != "" || !strings.HasPrefix(d.ItemID, "fc_") {
			t.Errorf("delta %s; want item_id fc_... and no call_id", f.Data)
		}
		order = append(order, d.ItemID)
	}
	want := []string{"fc_mock_0", "fc_mock_1", "fc_mock_0", "fc_mock_1", "fc_mock_0", "fc_mock_1", "fc_mock_0", "fc_mock_1"}
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Errorf("delta order = %v; want %v", order, want)
	}
}

func TestResponsesStreamEndings(t *testing.T) {
	tests := []struct {
		name     string
		stream   *mockllm.ResponsesStream
		terminal string
		check    func(t *testing.T, r *responses.Response)
	}{
		{
			name:     "incomplete",
			stream:   mockllm.NewResponsesStream("m").Text("cut").Usage(3, 0, 1, 0).Incomplete("max_output_tokens"),
			terminal: "response.incomplete",
			check: func(t *testing.T, r *responses.Response) {
				t.Helper()
				if r.Status != "incomplete" || r.IncompleteDetails.Reason != "max_output_tokens" || r.OutputText() != "cut" {
					t.Errorf("response = %s; want incomplete for max_output_tokens with its text", r.RawJSON())
				}
			},
		},
		{
			name:     "failed",
			stream:   mockllm.NewResponsesStream("m").Failed("server_error", "boom"),
			terminal: "response.failed",
			check: func(t *testing.T, r *responses.Response) {
				t.Helper()
				if r.Status != "failed" || r.Error.Code != "server_error" || r.Error.Message != "boom" {
					t.Errorf("response = %s; want failed with its error", r.RawJSON())
				}
			},
		},
		{
			name:     "error event",
			stream:   mockllm.NewResponsesStream("m").Error("rate_limit_exceeded", "Rate limit reached. Please try again in 1.2s."),
			terminal: "error",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := accumulateResponses(t, framesAsEvents(tt.stream.Frames()))
			if got.terminal != tt.terminal {
				t.Fatalf("terminal = %q; want %q", got.terminal, tt.terminal)
			}
			if tt.check != nil {
				tt.check(t, got.final)
			}
		})
	}
}

// responsesTools is the request's tools in the Responses shape.
func responsesTools(ts ...tool) []any {
	var out []any
	for _, t := range ts {
		out = append(out, map[string]any{"type": "function", "name": t.name, "parameters": t.params, "strict": false})
	}
	return out
}

func TestResponsesDefaultToolCalls(t *testing.T) {
	tools := []tool{
		{"get_time", obj(map[string]any{"tz": map[string]any{"type": "string", "default": "UTC"}})},
		{"calc", obj(map[string]any{"expression": map[string]any{"type": "string"}})},
	}
	const prompt = "Combien font 12 * (3 + 4) ?"
	for _, stream := range []bool{true, false} {
		name := map[bool]string{true: "stream", false: "json"}[stream]
		t.Run(name, func(t *testing.T) {
			srv := start(t, mockllm.New(mockllm.Default(mockllm.DefaultOptions{Split: 3})))
			body := mustJSON(t, map[string]any{
				"model": "mock-1", "stream": stream, "store": false, "instructions": "s",
				"input": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_text", "text": prompt}}}},
				"tools": responsesTools(tools...),
			})
			res := post(t, srv, "/v1/responses", body)
			if res.status != http.StatusOK || res.readErr != nil {
				t.Fatalf("POST = %d, %v; want 200", res.status, res.readErr)
			}
			var final *responses.Response
			if stream {
				if ct := res.header.Get("Content-Type"); ct != "text/event-stream" {
					t.Errorf("Content-Type = %q; want text/event-stream", ct)
				}
				events, _ := parseSSE(res.body)
				got := accumulateResponses(t, events)
				if got.terminal != "response.completed" {
					t.Fatalf("terminal = %q; want response.completed", got.terminal)
				}
				final = got.final
			} else {
				if ct := res.header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type = %q; want application/json", ct)
				}
				final = &responses.Response{}
				if err := json.Unmarshal(res.body, final); err != nil {
					t.Fatalf("body is not a response: %v\n%s", err, res.body)
				}
			}
			if final.Status != "completed" || final.OutputText() != "Let me check. " {
				t.Errorf("response status %q text %q; want completed, %q", final.Status, final.OutputText(), "Let me check. ")
			}
			fcs := functionCalls(final)
			want := []struct{ name, args string }{{"get_time", `{"tz":"UTC"}`}, {"calc", `{"expression":"12 * (3 + 4)"}`}}
			if len(fcs) != len(want) {
				t.Fatalf("got %d function calls; want %d", len(fcs), len(want))
			}
			for i, c := range fcs {
				if c.Name != want[i].name || !jsonEqual(c.Arguments, want[i].args) || !strings.HasPrefix(c.CallID, "call_mock") {
					t.Errorf("call %d = %s %s %s; want call_mock... %s %s", i, c.CallID, c.Name, c.Arguments, want[i].name, want[i].args)
				}
			}
			if final.Usage.InputTokens <= 0 || final.Usage.OutputTokens <= 0 {
				t.Errorf("usage = %+v; want positive counts", final.Usage)
			}
		})
	}
}

func TestResponsesDefaultAnswers(t *testing.T) {
	tests := []struct {
		name  string
		input any
		tools []any
		want  string
	}{
		{
			name: "function call outputs",
			input: []any{
				map[string]any{"role": "user", "content": "time?"},
				map[string]any{"type": "function_call", "call_id": "c0", "name": "old", "arguments": "{}"},
				map[string]any{"type": "function_call_output", "call_id": "c0", "output": "stale"},
				map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "More."}}},
				map[string]any{"type": "function_call", "call_id": "c1", "name": "get_time", "arguments": "{}"},
				map[string]any{"type": "function_call", "call_id": "c2", "name": "get_date", "arguments": "{}"},
				map[string]any{"type": "function_call_output", "call_id": "c1", "output": "10:00"},
				map[string]any{"type": "function_call_output", "call_id": "c2", "output": []any{map[string]any{"type": "input_text", "text": "Monday"}}},
				map[string]any{"type": "function_call_output", "call_id": "zz", "output": "?"},
			},
			tools: responsesTools(tool{"get_time", obj(nil)}),
			want:  `Here is what I found: get_time said "10:00"; get_date said "Monday"; a tool said "?".`,
		},
		{
			name:  "no tools",
			input: []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_text", "text": "hi"}}}},
			want:  "Hello from the mock provider. You said: hi",
		},
		{
			name:  "string input",
			input: "bonjour ☕",
			want:  "Hello from the mock provider. You said: bonjour ☕",
		},
		{
			name:  "tools offered but the last item is not from the user",
			input: []any{map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "x"}}}},
			tools: responsesTools(tool{"f", obj(nil)}),
			want:  "Hello from the mock provider. You said: x",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := start(t, mockllm.New(nil))
			res := post(t, srv, "/responses", mustJSON(t, map[string]any{"model": "m", "stream": true, "input": tt.input, "tools": tt.tools}))
			events, _ := parseSSE(res.body)
			got := accumulateResponses(t, events)
			if got.final == nil || got.final.OutputText() != tt.want || len(functionCalls(got.final)) != 0 {
				t.Errorf("answer = %+v; want text %q and no calls", got.snapshot, tt.want)
			}
		})
	}
}

func TestResponsesRequestsRecorded(t *testing.T) {
	s := mockllm.New(nil)
	srv := start(t, s)
	bodies := []struct {
		path, body string
	}{
		{"/v1/responses", `{"model":"r","instructions":"be brief","stream":true,"store":false,"input":[{"role":"user","content":[{"type":"input_text","text":"caf\u00e9"},{"type":"input_image","image_url":"data:image/png;base64,AAAA","detail":"auto"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"r"}],"tools":[{"type":"function","name":"f","description":"d","parameters":{"type":"object"},"strict":false},{"type":"web_search"}]}`},
		{"/responses", `{"model":"s","input":"plain"}`},
		{"/v1/chat/completions", `{"model":"c","messages":[{"role":"user","content":"x"}]}`},
	}
	for _, b := range bodies {
		post(t, srv, b.path, b.body)
	}
	post(t, srv, "/v1/responses", `{"input": 3}`) // rejected: not recorded
	reqs := s.Requests()
	if len(reqs) != len(bodies) {
		t.Fatalf("len(Requests()) = %d; want %d", len(reqs), len(bodies))
	}
	for i, r := range reqs {
		if string(r.Body) != bodies[i].body || r.Path != bodies[i].path {
			t.Errorf("Requests()[%d] = %s %q; want %s and the body verbatim", i, r.Path, r.Body, bodies[i].path)
		}
	}
	r := reqs[0]
	if !r.IsResponses() || r.Model != "r" || r.Instructions != "be brief" || !r.Stream || len(r.Input) != 3 || len(r.Messages) != 0 {
		t.Fatalf("Requests()[0] = %+v; want a parsed streaming Responses request with 3 items", r)
	}
	if in := r.Input[0]; !in.IsMessage("user") || in.Text() != "café" || len(in.Content) != 2 || in.Content[1].ImageURL != "data:image/png;base64,AAAA" {
		t.Errorf("Input[0] = %+v; want the user message with text and image", in)
	}
	if in := r.Input[1]; in.Type != "function_call" || in.CallID != "c" || in.Name != "f" || in.Arguments != "{}" {
		t.Errorf("Input[1] = %+v; want the function call", in)
	}
	if in := r.LastInput(); in.Type != "function_call_output" || in.CallID != "c" || in.Text() != "r" {
		t.Errorf("LastInput() = %+v; want the function call output", in)
	}
	if len(r.Tools) != 1 || r.Tools[0].Function.Name != "f" || r.Tools[0].Function.Description != "d" || r.Tools[0].Function.Parameters["type"] != "object" {
		t.Errorf("Tools = %+v; want only the function tool, in the chat shape", r.Tools)
	}
	if r := reqs[1]; r.Stream || len(r.Input) != 1 || !r.LastInput().IsMessage("user") || r.LastInput().Text() != "plain" {
		t.Errorf("Requests()[1] = %+v; want a non-streaming request whose string input is one user message", r)
	}
	if r := reqs[2]; r.IsResponses() || len(r.Input) != 0 || r.LastMessage().Text() != "x" {
		t.Errorf("Requests()[2] = %+v; want a chat request", r)
	}
}

func TestResponsesJSONAnswers(t *testing.T) {
	full := mockllm.NewResponsesStream("m").Text("hi there").Usage(5, 0, 2, 0)
	tests := []struct {
		name   string
		resp   *mockllm.Response
		status int
		check  func(t *testing.T, body []byte)
	}{
		{
			name: "completed", resp: mockllm.NewResponsesStream("m").Text("hi there").Usage(5, 0, 2, 0).Completed().Response(), status: 200,
			check: func(t *testing.T, body []byte) {
				t.Helper()
				var r responses.Response
				if err := json.Unmarshal(body, &r); err != nil || r.Status != "completed" || r.OutputText() != "hi there" || r.Usage.InputTokens != 5 {
					t.Errorf("body = %s; want the completed response", body)
				}
			},
		},
		{
			name: "incomplete", resp: mockllm.NewResponsesStream("m").Text("cut").Incomplete("content_filter").Response(), status: 200,
			check: func(t *testing.T, body []byte) {
				t.Helper()
				var r responses.Response
				if err := json.Unmarshal(body, &r); err != nil || r.Status != "incomplete" || r.IncompleteDetails.Reason != "content_filter" {
					t.Errorf("body = %s; want the incomplete response", body)
				}
			},
		},
		{
			name: "no terminal event", resp: full.Response(), status: 200,
			check: func(t *testing.T, body []byte) {
				t.Helper()
				var r responses.Response
				if err := json.Unmarshal(body, &r); err != nil || r.Status != "in_progress" {
					t.Errorf("body = %s; want the last response seen, in progress", body)
				}
			},
		},
		{
			name: "error event", resp: mockllm.NewResponsesStream("m").Error("rate_limit_exceeded", "slow down").Response(), status: 200,
			check: func(t *testing.T, body []byte) {
				t.Helper()
				if !jsonEqual(string(body), `{"error":{"message":"slow down","type":"error","code":"rate_limit_exceeded"}}`) {
					t.Errorf("body = %s; want an error object", body)
				}
			},
		},
		{
			name: "HTTP error", resp: mockllm.Error(http.StatusTooManyRequests, "rate_limit_exceeded", "slow", http.Header{"Retry-After": {"1"}}), status: 429,
			check: func(t *testing.T, body []byte) {
				t.Helper()
				if !strings.Contains(string(body), "rate_limit_exceeded") {
					t.Errorf("body = %s; want the error body", body)
				}
			},
		},
		{
			name: "NotStream", resp: &mockllm.Response{NotStream: true, Body: `{"x":1}`}, status: 200,
			check: func(t *testing.T, body []byte) {
				t.Helper()
				if string(body) != `{"x":1}` {
					t.Errorf("body = %s; want the body verbatim", body)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := start(t, mockllm.New(mockllm.Queue(tt.resp)))
			res := post(t, srv, "/v1/responses", `{"model":"m","stream":false,"input":"x"}`)
			if res.status != tt.status || res.readErr != nil {
				t.Fatalf("POST = %d, %v; want %d", res.status, res.readErr, tt.status)
			}
			if ct := res.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q; want application/json", ct)
			}
			tt.check(t, res.body)
		})
	}
}

func TestResponsesFaults(t *testing.T) {
	frames := mockllm.NewResponsesStream("m").Text("one two three").Completed().Frames()
	t.Run("stream DisconnectAfter", func(t *testing.T) {
		srv := start(t, mockllm.New(mockllm.Queue(&mockllm.Response{Frames: frames, DisconnectAfter: 3})))
		res := post(t, srv, "/v1/responses", `{"stream":true}`)
		events, _ := parseSSE(res.body)
		if res.readErr == nil || len(events) != 3 {
			t.Errorf("read err %v, %d events; want a broken connection after 3", res.readErr, len(events))
		}
	})
	t.Run("json DisconnectAfter", func(t *testing.T) {
		srv := start(t, mockllm.New(mockllm.Queue(&mockllm.Response{Frames: frames, DisconnectAfter: 1})))
		res := post(t, srv, "/v1/responses", `{"stream":false}`)
		if res.readErr == nil || json.Valid(res.body) {
			t.Errorf("read err %v, body %q; want a broken connection mid-body", res.readErr, res.body)
		}
	})
	t.Run("json Stall", func(t *testing.T) {
		srv := start(t, mockllm.New(mockllm.Queue(&mockllm.Response{Frames: frames, Stall: 20 * time.Millisecond})))
		res := post(t, srv, "/v1/responses", `{"stream":false}`)
		var r responses.Response
		if err := json.Unmarshal(res.body, &r); err != nil || r.Status != "completed" {
			t.Errorf("body = %s; want the completed response after the stall", res.body)
		}
	})
	t.Run("no [DONE]", func(t *testing.T) {
		srv := start(t, mockllm.New(mockllm.Queue(mockllm.NewResponsesStream("m").Text("x").Completed().Response())))
		res := post(t, srv, "/v1/responses", `{"stream":true}`)
		if strings.Contains(string(res.body), "[DONE]") || !strings.HasSuffix(string(res.body), "\n\n") {
			t.Errorf("body ends %q; want the last event and no [DONE]", res.body[max(0, len(res.body)-40):])
		}
	})
	t.Run("routes", func(t *testing.T) {
		srv := start(t, mockllm.New(nil))
		for _, path := range []string{"/v1/responses", "/responses"} {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			r, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			r.Body.Close()
			if r.StatusCode != http.StatusMethodNotAllowed {
				t.Errorf("GET %s = %d; want 405", path, r.StatusCode)
			}
		}
		if res := post(t, srv, "/v1/responses", "["); res.status != http.StatusBadRequest {
			t.Errorf("POST bad body = %d; want 400", res.status)
		}
	})
}

package mockllm_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/mockllm"
)

const (
	chatBody      = `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`
	responsesBody = `{"model":"m","input":"hi","stream":true}`
)

func floodServer(t *testing.T, resp *mockllm.Response) (*mockllm.Server, *httptest.Server) {
	t.Helper()
	s := mockllm.New(mockllm.Queue(resp))
	return s, start(t, s)
}

// TestFloodChat: each content flood is a valid Chat Completions stream, as
// the official SDK accumulates it, of exactly the size asked for.
func TestFloodChat(t *testing.T) {
	tests := []struct {
		name  string
		flood mockllm.Flood
		check func(t *testing.T, acc accumulated, events []event)
	}{
		{"text", mockllm.Flood{Kind: mockllm.FloodText, Bytes: 10_000, Piece: 3000}, func(t *testing.T, acc accumulated, events []event) {
			if len(acc.text) != 10_000 || acc.finish != "stop" || len(events) != 4+1+1 {
				t.Errorf("text %d bytes, finish %q, %d events; want 10000 bytes in 4 deltas, stop, [DONE]", len(acc.text), acc.finish, len(events))
			}
		}},
		{"frame", mockllm.Flood{Kind: mockllm.FloodFrame, Bytes: 100_000}, func(t *testing.T, acc accumulated, events []event) {
			if len(acc.text) != 100_000 || len(events) != 3 {
				t.Errorf("text %d bytes in %d events; want 100000 in one frame, a finish and [DONE]", len(acc.text), len(events))
			}
		}},
		{"reasoning", mockllm.Flood{Kind: mockllm.FloodReasoning, Bytes: 5000}, func(t *testing.T, acc accumulated, _ []event) {
			if len(acc.reasoning) != 5000 || acc.text != "ok" || acc.finish != "stop" {
				t.Errorf("reasoning %d bytes, text %q, finish %q; want 5000, ok, stop", len(acc.reasoning), acc.text, acc.finish)
			}
		}},
		{"arguments", mockllm.Flood{Kind: mockllm.FloodArguments, Bytes: 10_000, Piece: 4096}, func(t *testing.T, acc accumulated, _ []event) {
			if len(acc.calls) != 1 || len(acc.calls[0].Function.Arguments) != 10_000 || !json.Valid([]byte(acc.calls[0].Function.Arguments)) || acc.finish != "tool_calls" {
				t.Errorf("calls %d, finish %q; want one call of 10000 bytes of JSON, tool_calls", len(acc.calls), acc.finish)
			}
		}},
		{"tool calls", mockllm.Flood{Kind: mockllm.FloodToolCalls, Count: 300}, func(t *testing.T, acc accumulated, _ []event) {
			if len(acc.calls) != 300 || acc.calls[299].ID != "call_299" || acc.finish != "tool_calls" {
				t.Errorf("calls %d, finish %q; want 300 calls, tool_calls", len(acc.calls), acc.finish)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, srv := floodServer(t, &mockllm.Response{Flood: &tt.flood, Done: true})
			res := post(t, srv, "/v1/chat/completions", chatBody)
			if res.status != http.StatusOK || res.readErr != nil {
				t.Fatalf("POST = %d, %v; want 200", res.status, res.readErr)
			}
			events, _ := parseSSE(res.body)
			acc := accumulate(t, events)
			if !acc.done {
				t.Errorf("stream did not end with [DONE]")
			}
			tt.check(t, acc, events)
			if w := s.Requests()[0].Written(); w != int64(len(res.body)) {
				t.Errorf("Written() = %d; want the %d bytes read", w, len(res.body))
			}
		})
	}
}

// TestFloodResponses: the content floods in the Responses shape: deltas of
// the size asked for, and a response.completed.
func TestFloodResponses(t *testing.T) {
	tests := []struct {
		flood  mockllm.Flood
		deltas map[string]int // bytes of delta per event type
		items  int            // output_item.done events
	}{
		{mockllm.Flood{Kind: mockllm.FloodText, Bytes: 5000, Piece: 1000}, map[string]int{"response.output_text.delta": 5000}, 0},
		{mockllm.Flood{Kind: mockllm.FloodReasoning, Bytes: 3000}, map[string]int{"response.reasoning_summary_text.delta": 3000, "response.output_text.delta": 2}, 0},
		{mockllm.Flood{Kind: mockllm.FloodArguments, Bytes: 5000}, map[string]int{"response.function_call_arguments.delta": 5000}, 1},
		{mockllm.Flood{Kind: mockllm.FloodToolCalls, Count: 50}, map[string]int{"response.function_call_arguments.delta": 100}, 50},
	}
	for _, tt := range tests {
		t.Run(string(tt.flood.Kind), func(t *testing.T) {
			_, srv := floodServer(t, &mockllm.Response{Flood: &tt.flood})
			res := post(t, srv, "/v1/responses", responsesBody)
			events, _ := parseSSE(res.body)
			got, items := map[string]int{}, 0
			for i, ev := range events {
				var e struct {
					Type  string `json:"type"`
					Delta string `json:"delta"`
				}
				if err := json.Unmarshal([]byte(ev.data), &e); err != nil || e.Type != ev.name {
					t.Fatalf("event %d = %s %.80s; want JSON whose type is the event line", i, ev.name, ev.data)
				}
				if strings.HasSuffix(e.Type, ".delta") {
					got[e.Type] += len(e.Delta)
				}
				if e.Type == "response.output_item.done" {
					items++
				}
			}
			if len(events) == 0 || events[len(events)-1].name != "response.completed" {
				t.Errorf("last event is not response.completed")
			}
			for typ, n := range tt.deltas {
				if got[typ] != n {
					t.Errorf("%s bytes = %d; want %d", typ, got[typ], n)
				}
			}
			if items != tt.items {
				t.Errorf("output_item.done events = %d; want %d", items, tt.items)
			}
		})
	}
}

// TestFloodFraming: the floods that break SSE framing write exactly what
// they say.
func TestFloodFraming(t *testing.T) {
	tests := []struct {
		flood mockllm.Flood
		want  string
	}{
		{mockllm.Flood{Kind: mockllm.FloodLine, Bytes: 5}, "data: xxxxx"},
		{mockllm.Flood{Kind: mockllm.FloodDataLines, Bytes: 5, Piece: 2}, "data: xx\ndata: xx\ndata: x\n"},
	}
	for _, tt := range tests {
		t.Run(string(tt.flood.Kind), func(t *testing.T) {
			_, srv := floodServer(t, &mockllm.Response{Flood: &tt.flood})
			if res := post(t, srv, "/v1/chat/completions", chatBody); string(res.body) != tt.want {
				t.Errorf("body = %q; want %q", res.body, tt.want)
			}
		})
	}
}

// TestFloodBody: a body flood is an error object of the size asked for, or
// a non-streamed Responses answer whose message is.
func TestFloodBody(t *testing.T) {
	tests := []struct {
		name   string
		resp   *mockllm.Response
		path   string
		body   string
		status int
		text   func(b []byte) string
	}{
		{"error body", &mockllm.Response{Status: 500, Flood: &mockllm.Flood{Kind: mockllm.FloodBody, Bytes: 70_000}}, "/v1/chat/completions", chatBody, 500,
			func(b []byte) string {
				var e struct{ Error struct{ Message string } }
				json.Unmarshal(b, &e) //nolint:errcheck // an empty message fails the test
				return e.Error.Message
			}},
		{"non-streamed response", &mockllm.Response{Flood: &mockllm.Flood{Kind: mockllm.FloodBody, Bytes: 70_000}}, "/v1/responses", `{"model":"m","input":"hi"}`, 200,
			func(b []byte) string {
				var r struct {
					Status string
					Output []struct{ Content []struct{ Text string } }
				}
				if json.Unmarshal(b, &r) != nil || r.Status != "completed" || len(r.Output) != 1 || len(r.Output[0].Content) != 1 {
					return ""
				}
				return r.Output[0].Content[0].Text
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := floodServer(t, tt.resp)
			res := post(t, srv, tt.path, tt.body)
			if res.status != tt.status || res.header.Get("Content-Type") != "application/json" {
				t.Errorf("POST = %d %s; want %d application/json", res.status, res.header.Get("Content-Type"), tt.status)
			}
			if got := tt.text(res.body); got != strings.Repeat("x", 70_000) {
				t.Errorf("body text is %d bytes; want 70000", len(got))
			}
		})
	}
}

// TestFloodStopsWhenTheClientHangsUp: a 1 GiB flood whose client reads
// 1 MiB and hangs up ends its handler (the server's Close waits for it)
// having written a bounded amount.
func TestFloodStopsWhenTheClientHangsUp(t *testing.T) {
	for _, kind := range []mockllm.FloodKind{mockllm.FloodLine, mockllm.FloodDataLines, mockllm.FloodText} {
		t.Run(string(kind), func(t *testing.T) {
			s := mockllm.New(mockllm.Queue(&mockllm.Response{Flood: &mockllm.Flood{Kind: kind, Bytes: 1 << 30}}))
			srv := httptest.NewServer(s)
			res, err := srv.Client().Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(chatBody))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.CopyN(io.Discard, res.Body, 1<<20); err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			srv.Close() // returns once the handler has
			if w := s.Requests()[0].Written(); w > 64<<20 {
				t.Errorf("Written() = %d after the client hung up; want at most 64 MiB", w)
			}
		})
	}
}

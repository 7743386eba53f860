package mockllm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"go.uber.org/goleak"

	"github.com/turnstream/turnstream/internal/mockllm"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func start(t *testing.T, s *mockllm.Server) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv
}

// rawResponse is an HTTP answer read to its end (or to a broken connection).
type rawResponse struct {
	status  int
	header  http.Header
	body    []byte
	readErr error
}

// post sends body to path and reads the whole raw answer.
func post(t *testing.T, srv *httptest.Server, path, body string) rawResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // only against hangs
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer res.Body.Close()
	b, readErr := io.ReadAll(res.Body)
	return rawResponse{status: res.StatusCode, header: res.Header, body: b, readErr: readErr}
}

// event is one server-sent event.
type event struct {
	name string
	data string
}

// parseSSE splits an event-stream body into its events and comments.
func parseSSE(body []byte) (events []event, comments []string) {
	var cur event
	var data []string
	for _, line := range strings.Split(string(body), "\n") {
		switch {
		case line == "":
			if data != nil {
				cur.data = strings.Join(data, "\n")
				events = append(events, cur)
			}
			cur, data = event{}, nil
		case strings.HasPrefix(line, ":"):
			comments = append(comments, strings.TrimSpace(line[1:]))
		case strings.HasPrefix(line, "event:"):
			cur.name = strings.TrimSpace(line[len("event:"):])
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(line[len("data:"):], " "))
		}
	}
	return events, comments
}

// accumulated is a stream as the official SDK accumulates it.
type accumulated struct {
	text      string
	reasoning string
	calls     []openai.ChatCompletionMessageToolCallUnion
	finish    string
	usage     openai.CompletionUsage
	done      bool
}

// accumulate decodes every data event as an openai-go ChatCompletionChunk
// and feeds it to the SDK's accumulator.
func accumulate(t *testing.T, events []event) accumulated {
	t.Helper()
	var acc openai.ChatCompletionAccumulator
	var out accumulated
	for i, ev := range events {
		if ev.data == "[DONE]" {
			if i != len(events)-1 {
				t.Errorf("[DONE] is event %d of %d; want it last", i, len(events))
			}
			out.done = true
			continue
		}
		out.reasoning += reasoningOf(t, ev.data)
		var chunk openai.ChatCompletionChunk
		if err := json.Unmarshal([]byte(ev.data), &chunk); err != nil {
			t.Fatalf("event %d is not a chunk: %v\n%s", i, err, ev.data)
		}
		if chunk.Object != "chat.completion.chunk" || chunk.ID == "" || chunk.Model == "" || !chunk.JSON.Choices.Valid() {
			t.Errorf("event %d = %s; want id, model, choices and object chat.completion.chunk", i, ev.data)
		}
		if !acc.AddChunk(chunk) {
			t.Fatalf("the SDK accumulator rejected event %d: %s", i, ev.data)
		}
	}
	if len(acc.Choices) > 0 {
		out.text = acc.Choices[0].Message.Content
		out.calls = acc.Choices[0].Message.ToolCalls
		out.finish = acc.Choices[0].FinishReason
	}
	out.usage = acc.Usage
	return out
}

func reasoningOf(t *testing.T, data string) string {
	t.Helper()
	var c struct {
		Choices []struct {
			Delta map[string]json.RawMessage `json:"delta"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(data), &c); err != nil {
		t.Fatalf("chunk %s: %v", data, err)
	}
	var out string
	for _, ch := range c.Choices {
		for _, k := range []string{"reasoning_content", "reasoning"} {
			if raw, ok := ch.Delta[k]; ok {
				var s string
				if err := json.Unmarshal(raw, &s); err != nil {
					t.Fatalf("delta %s = %s; want a string", k, raw)
				}
				out += s
			}
		}
	}
	return out
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// jsonEqual compares two JSON texts by value.
func jsonEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

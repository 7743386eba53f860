package providertest_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/providertest"
)

func TestSplitSSE(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []providertest.Event
	}{
		{"empty", "", nil},
		{"comments only", ": a\n\n: b\n\n", nil},
		{
			"named, multi-line, last without blank line",
			"event: x\ndata: a\ndata:b\n\n: c\n\ndata: [DONE]",
			[]providertest.Event{{Name: "x", Data: []byte("a\nb")}, {Data: []byte("[DONE]")}},
		},
		{"empty data", "data:\n\n", []providertest.Event{{Data: []byte("")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := providertest.SplitSSE([]byte(tt.body))
			if len(got) != len(tt.want) {
				t.Fatalf("SplitSSE(%q) = %q; want %q", tt.body, got, tt.want)
			}
			for i := range got {
				if got[i].Name != tt.want[i].Name || !bytes.Equal(got[i].Data, tt.want[i].Data) {
					t.Errorf("SplitSSE(%q)[%d] = %q; want %q", tt.body, i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestDataLines(t *testing.T) {
	tests := []struct {
		body string
		want []string
	}{
		{"", nil},
		{"data: a\n\n: c\ndata: b\ndata:c\nevent: x\ndata: [DONE]", []string{"a", "b", "[DONE]"}},
	}
	for _, tt := range tests {
		var got []string
		for _, p := range providertest.DataLines([]byte(tt.body)) {
			got = append(got, string(p))
		}
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("DataLines(%q) = %q; want %q", tt.body, got, tt.want)
		}
	}
}

// TestRecord: a recorded frame keeps its bytes after the adapter reuses
// its buffer.
func TestRecord(t *testing.T) {
	var frames []provider.Frame
	sink := providertest.Record(&frames)
	buf := []byte("one")
	if err := sink(provider.Frame{Raw: buf, Event: "e"}); err != nil {
		t.Fatalf("sink() error = %v", err)
	}
	copy(buf, "two")
	if len(frames) != 1 || string(frames[0].Raw) != "one" || frames[0].Event != "e" {
		t.Errorf("recorded frames = %+v; want one frame e \"one\"", frames)
	}
}

// TestHandlers: each handler answers byte for byte with its headers, and
// Serve records what it was sent.
func TestHandlers(t *testing.T) {
	tests := []struct {
		name       string
		h          http.HandlerFunc
		status     int
		header     map[string]string
		wantBody   string
		reqBody    string
		reqHeaders map[string]string
	}{
		{
			name: "SSE", h: providertest.SSE([]byte("data: a\n"), "X-Request-Id", "r1"),
			status: 200, header: map[string]string{"Content-Type": "text/event-stream", "X-Request-Id": "r1"}, wantBody: "data: a\n",
		},
		{
			name: "SSE with its own content type", h: providertest.SSE([]byte("x"), "Content-Type", "text/event-stream; charset=utf-8"),
			status: 200, header: map[string]string{"Content-Type": "text/event-stream; charset=utf-8"}, wantBody: "x",
		},
		{
			name: "Echo", h: providertest.Echo("x-ds-trace-id", "t"), reqBody: "data: echo\n\n",
			status: 200, header: map[string]string{"Content-Type": "text/event-stream", "X-Ds-Trace-Id": "t"}, wantBody: "data: echo\n\n",
		},
		{
			name: "Reply", h: providertest.Reply(429, "application/json", `{"error":{}}`, "Retry-After", "1", "Content-Type", "text/plain"),
			status: 429, header: map[string]string{"Content-Type": "application/json", "Retry-After": "1"}, wantBody: `{"error":{}}`,
		},
		{
			name: "Reply without a content type", h: providertest.Reply(503, "", ""),
			status: 503, header: map[string]string{"Retry-After": ""}, wantBody: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, seen := providertest.Serve(t, tt.h)
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/v1/x", strings.NewReader(tt.reqBody))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("X-Sent", "s")
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Fatalf("Do() error = %v", err)
			}
			defer res.Body.Close()
			body, err := io.ReadAll(res.Body)
			if err != nil || res.StatusCode != tt.status || string(body) != tt.wantBody {
				t.Errorf("response = %d %q, %v; want %d %q", res.StatusCode, body, err, tt.status, tt.wantBody)
			}
			for k, v := range tt.header {
				if got := res.Header.Get(k); got != v {
					t.Errorf("response header %s = %q; want %q", k, got, v)
				}
			}
			reqs := seen.All()
			if len(reqs) != 1 {
				t.Fatalf("Received.All() = %d requests; want 1", len(reqs))
			}
			providertest.CheckRequest(t, reqs[0], providertest.WantRequest{Path: "/v1/x", Header: map[string]string{"X-Sent": "s"}, Body: tt.reqBody})
		})
	}
}

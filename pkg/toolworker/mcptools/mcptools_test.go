package mcptools_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/turnstream/turnstream/pkg/toolworker/mcptools"
	"github.com/turnstream/turnstream/pkg/wire"
)

func toolNames(tools []wire.Tool) []string {
	var names []string
	for _, t := range tools {
		names = append(names, t.Name)
	}
	return names
}

// TestToolsFromList starts the test MCP server as a child process: the
// tools it lists (over several pages) are served under their names with
// their input schemas, but for files.read, whose name is no subject token:
// it is refused, with the reason logged, not renamed. The hints make echo
// (read-only) and add (idempotent) idempotent.
func TestToolsFromList(t *testing.T) {
	e := newEnv(t)
	s := e.start(t, []mcptools.Source{stdio(ledgerPath(t))})

	tools := s.Tools()
	want := []string{"add", "crash", "echo", "fail", "image", "pid", "structured"}
	if got := toolNames(tools); !slices.Equal(got, want) {
		t.Errorf("Tools() names = %v; want %v", got, want)
	}
	if got := slices.Sorted(func(yield func(string) bool) {
		for name := range s.Handlers() {
			if !yield(name) {
				return
			}
		}
	}); !slices.Equal(got, want) {
		t.Errorf("Handlers() names = %v; want %v", got, want)
	}
	if got, want := s.Idempotent(), []string{"add", "echo"}; !slices.Equal(got, want) {
		t.Errorf("Idempotent() = %v; want %v", got, want)
	}
	echo := tools[slices.IndexFunc(tools, func(t wire.Tool) bool { return t.Name == "echo" })]
	props, _ := echo.Parameters["properties"].(map[string]any)
	text, _ := props["text"].(map[string]any)
	if echo.Description != "Echoes text." || echo.Parameters["type"] != "object" || text["type"] != "string" || text["description"] != "the text to echo" {
		t.Errorf("echo = %+v; want its description and input schema", echo)
	}
	if !e.logs.contains(`"mcp_tool":"files.read"`) || !e.logs.contains("not a valid turnstream tool name") {
		t.Errorf("files.read was not refused with its reason; logs:\n%s", e.logs)
	}
}

// TestCallsMapped runs a call of each kind end to end: dispatched on
// turn.tool.<name>, claimed and run by toolworker.Serve, sent to the MCP
// server as tools/call, answered on turn.result.s1.
func TestCallsMapped(t *testing.T) {
	e, _, r := serveStdio(t)

	tests := []struct {
		name, tool, args string
		want             string
		wantError        bool
	}{
		{name: "text", tool: "echo", args: `{"text":"hello <world>"}`, want: "hello <world>"},
		{name: "structured repeated as text", tool: "add", args: `{"a":2,"b":3}`, want: `{"sum":5}`},
		{name: "structured only", tool: "structured", args: `{}`, want: `{"items":["a","<b>"],"sum":3}`},
		{name: "isError", tool: "fail", args: `{}`, want: "boom", wantError: true},
		{name: "non-text content described", tool: "image", args: `{}`, want: "a dot:\n[image: image/png, 3 bytes, not shown]"},
		{name: "arguments not an object", tool: "echo", args: `["hello"]`, want: "error: the arguments must be a JSON object", wantError: true},
		{name: "arguments refused by the server", tool: "add", args: `{"a":"two"}`, wantError: true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := e.call(t, r, newCall(tt.tool, "c"+string(rune('a'+i)), tt.args))
			if got.IsError != tt.wantError || (tt.want != "" && got.Content != tt.want) || got.Synthesized {
				t.Errorf("%s(%s) = %q, is_error %v, synthesized %v; want %q, is_error %v", tt.tool, tt.args, got.Content, got.IsError, got.Synthesized, tt.want, tt.wantError)
			}
		})
	}
}

// TestRedeliveredCallRunsOnce dispatches the same call twice: the second
// delivery is answered from the call's claim, and the MCP server runs the
// tool once.
func TestRedeliveredCallRunsOnce(t *testing.T) {
	e, ledger, r := serveStdio(t)

	call := newCall("echo", "c1", `{"text":"once"}`)
	if got := e.call(t, r, call); got.Content != "once" {
		t.Fatalf("echo = %q; want once", got.Content)
	}
	e.dispatch(t, call)
	e.settled(t, "echo")
	if n := runs(t, ledger, "echo"); n != 1 {
		t.Errorf("echo ran %d times; want 1", n)
	}
	if n := e.storedResults(t); n != 1 {
		t.Errorf("stored results = %d; want 1", n)
	}
	if !e.logs.contains(`"from_claim":true`) {
		t.Error("the second delivery was not answered from the claim")
	}
}

// TestServerCrash has the MCP server exit in the middle of a call: the
// call is answered at once with an is_error result, the server is
// restarted (a new process), and the next call runs there. The crashed
// call, dispatched again, is answered from its claim: it never runs twice.
func TestServerCrash(t *testing.T) {
	e, ledger, r := serveStdio(t)

	before := e.call(t, r, newCall("pid", "c1", `{}`)).Content
	crash := newCall("crash", "c2", `{}`)
	got := e.call(t, r, crash)
	if got.Content != mcptools.ServerStoppedContent || !got.IsError {
		t.Errorf("crash = %q, is_error %v; want %q, is_error", got.Content, got.IsError, mcptools.ServerStoppedContent)
	}
	after := e.call(t, r, newCall("pid", "c3", `{}`))
	if after.IsError || after.Content == before || after.Content == "" {
		t.Errorf("pid after the crash = %q (is_error %v); want a new process's, not %s", after.Content, after.IsError, before)
	}
	if !e.logs.contains("MCP server restarted") {
		t.Error(`no "MCP server restarted" logged`)
	}

	// The same call again: answered from its claim, a duplicate of the
	// stored result (the stream drops it by its message id).
	e.dispatch(t, crash)
	e.settled(t, "crash")
	if !e.logs.line(`"call_id":"c2"`, `"from_claim":true`) {
		t.Error("the crashed call, dispatched again, was not answered from its claim")
	}
	if n := e.storedResults(t); n != 3 {
		t.Errorf("stored results = %d; want 3 (one per call)", n)
	}
	if n := runs(t, ledger, "crash"); n != 1 {
		t.Errorf("crash ran %d times; want 1", n)
	}
}

// TestStreamableHTTP serves the tools of a streamable HTTP MCP server (the
// SDK's handler on a loopback listener).
func TestStreamableHTTP(t *testing.T) {
	e := newEnv(t)
	ledger := ledgerPath(t)
	mcpServer := newTestServer(ledger)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcpServer }, nil)
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)

	s := e.start(t, []mcptools.Source{{URL: hs.URL, Prefix: "web_"}})
	if got, want := toolNames(s.Tools()), []string{"web_add", "web_crash", "web_echo", "web_fail", "web_image", "web_pid", "web_structured"}; !slices.Equal(got, want) {
		t.Errorf("Tools() names = %v; want %v", got, want)
	}
	e.serve(t, s)
	r := e.follow(t)
	if got := e.call(t, r, newCall("web_echo", "c1", `{"text":"over http"}`)); got.Content != "over http" || got.IsError {
		t.Errorf("web_echo = %q, is_error %v; want over http", got.Content, got.IsError)
	}
	if got := e.call(t, r, newCall("web_fail", "c2", `{}`)); got.Content != "boom" || !got.IsError {
		t.Errorf("web_fail = %q, is_error %v; want boom, is_error", got.Content, got.IsError)
	}
	if n := runs(t, ledger, "echo"); n != 1 {
		t.Errorf("echo ran %d times; want 1", n)
	}

	// A tool the server no longer has: it answers with a protocol error,
	// which becomes an error result; the session goes on.
	mcpServer.RemoveTools("pid")
	if got := e.call(t, r, newCall("web_pid", "c3", `{}`)); !strings.HasPrefix(got.Content, "error: the MCP server refused the call: ") || !got.IsError {
		t.Errorf("web_pid after its removal = %q, is_error %v; want the server's refusal", got.Content, got.IsError)
	}
	if got := e.call(t, r, newCall("web_echo", "c4", `{"text":"still here"}`)); got.Content != "still here" {
		t.Errorf("web_echo after a refusal = %q; want still here", got.Content)
	}
	if e.logs.contains("MCP server stopped") {
		t.Error("a protocol error stopped the server")
	}
}

// TestNameCollisions starts three copies of the test server: the second
// one's tools all collide with the first's and are refused, the third's
// are served under its prefix, and a name reserved for another handler is
// refused from every server.
func TestNameCollisions(t *testing.T) {
	e := newEnv(t)
	ledger := ledgerPath(t)
	b := stdio(ledger)
	b.Name = "b"
	c := stdio(ledger)
	c.Prefix = "c_"
	s := e.start(t, []mcptools.Source{stdio(ledger), b, c}, mcptools.WithReserved("pid", "c_pid"))

	want := []string{"add", "c_add", "c_crash", "c_echo", "c_fail", "c_image", "c_structured", "crash", "echo", "fail", "image", "structured"}
	if got := toolNames(s.Tools()); !slices.Equal(got, want) {
		t.Errorf("Tools() names = %v; want %v", got, want)
	}
	if !e.logs.contains("already serves a tool of this name") || !e.logs.contains("another tool of this tool worker has the name") {
		t.Errorf("collisions not logged:\n%s", e.logs)
	}
}

// TestStartFails: a server that cannot start fails Start, naming it, and
// a set of servers with nothing to serve fails with ErrNoTools.
func TestStartFails(t *testing.T) {
	ctx := t.Context()
	_, err := mcptools.Start(ctx, []mcptools.Source{{Name: "missing", Command: "/nonexistent/mcp-server"}})
	if err == nil || !strings.Contains(err.Error(), "server missing") {
		t.Errorf("Start(missing command) = %v; want an error naming the server", err)
	}
	_, err = mcptools.Start(ctx, []mcptools.Source{stdio(ledgerPath(t))}, mcptools.WithReserved(listed...))
	if !errors.Is(err, mcptools.ErrNoTools) {
		t.Errorf("Start(every name reserved) = %v; want ErrNoTools", err)
	}
	_, err = mcptools.Start(ctx, nil)
	if !errors.Is(err, mcptools.ErrInvalidSource) {
		t.Errorf("Start(no sources) = %v; want ErrInvalidSource", err)
	}
}

// TestHTTPResponseBounded has a streamable HTTP server answer tools/call
// with a JSON body far larger than any result: the tool worker stops
// reading it at a bound, answers tool outcome unknown, and the server
// cannot make it read (and hold) the whole body.
func TestHTTPResponseBounded(t *testing.T) {
	e := newEnv(t)
	mcpServer := newTestServer(ledgerPath(t))
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcpServer }, nil)
	const bodyBytes = 96 << 20
	var written atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var call struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(body, &call) != nil || call.Method != "tools/call" {
			req.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, req)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		head := `{"jsonrpc":"2.0","id":` + string(call.ID) + `,"result":{"content":[{"type":"text","text":"`
		tail := `"}]}}`
		n, err := io.WriteString(w, head)
		written.Add(int64(n))
		block := bytes.Repeat([]byte("a"), 64<<10)
		for sent := 0; err == nil && sent < bodyBytes; sent += len(block) {
			n, err = w.Write(block)
			written.Add(int64(n))
		}
		if err == nil {
			_, _ = io.WriteString(w, tail)
		}
	}))
	t.Cleanup(hs.Close)

	s := e.start(t, []mcptools.Source{{URL: hs.URL}})
	e.serve(t, s)
	r := e.follow(t)
	got := e.call(t, r, newCall("echo", "c1", `{"text":"huge"}`))
	if got.Content != mcptools.ServerStoppedContent || !got.IsError {
		t.Errorf("echo with a %d MiB answer = %.80q…, is_error %v; want %q, is_error", bodyBytes>>20, got.Content, got.IsError, mcptools.ServerStoppedContent)
	}
	if n := written.Load(); n >= bodyBytes*2/3 {
		t.Errorf("the tool worker read %d MiB of the answer; want it to stop at its bound", n>>20)
	}
}

// TestUnreadableAnswer has a streamable HTTP server answer a call with a
// result the SDK cannot decode (a content block of an unknown type): the
// call is answered tool outcome unknown, and the server's session, which
// is fine, is not torn down: the next call runs on it.
func TestUnreadableAnswer(t *testing.T) {
	e := newEnv(t)
	mcpServer := newTestServer(ledgerPath(t))
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcpServer }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var call struct {
			ID     json.RawMessage `json:"id"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &call) != nil || call.Params.Name != "fail" {
			req.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, req)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(call.ID)+`,"result":{"content":[{"type":"hologram"}]}}`)
	}))
	t.Cleanup(hs.Close)

	s := e.start(t, []mcptools.Source{{URL: hs.URL}})
	e.serve(t, s)
	r := e.follow(t)
	if got := e.call(t, r, newCall("fail", "c1", `{}`)); !got.IsError || !strings.HasPrefix(got.Content, "error: tool outcome unknown") {
		t.Errorf("fail with an unreadable answer = %q, is_error %v; want tool outcome unknown, is_error", got.Content, got.IsError)
	}
	if got := e.call(t, r, newCall("echo", "c2", `{"text":"still here"}`)); got.Content != "still here" {
		t.Errorf("echo after an unreadable answer = %q; want still here", got.Content)
	}
	if e.logs.contains("MCP server stopped") {
		t.Error("an unreadable answer stopped the server")
	}
}

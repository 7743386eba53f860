package mcptools_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test MCP server runs in this test binary, re-executed with
// serverLedgerEnv set: it serves newTestServer on its stdin and stdout
// until stdin ends. Every call of echo, crash and slow appends
// "<tool> <pid>" to the ledger file, fsynced, before it has any effect,
// so the ledger counts the runs of each.
const serverLedgerEnv = "TURNSTREAM_TEST_MCP_LEDGER"

// listed are the tools newTestServer lists, in its order; files.read has a
// name MCP allows and turnstream does not.
var listed = []string{"echo", "add", "structured", "fail", "image", "pid", "crash", "files.read"}

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type addIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

type addOut struct {
	Sum int `json:"sum"`
}

// newTestServer is the MCP server of the tests, listing two tools per
// page so that listing takes several pages.
func newTestServer(ledger string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcptools-test", Version: "1"}, &mcp.ServerOptions{PageSize: 2})
	pid := strconv.Itoa(os.Getpid())
	record := func(tool string) error { return appendLedger(ledger, tool+" "+pid) }
	object := map[string]any{"type": "object"}

	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes text.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			if err := record("echo"); err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	// Typed output: the SDK repeats the structured content as JSON text.
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Adds two integers.", Annotations: &mcp.ToolAnnotations{IdempotentHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	s.AddTool(&mcp.Tool{Name: "structured", Description: "Structured content only.", InputSchema: object},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{StructuredContent: map[string]any{"sum": 3, "items": []any{"a", "<b>"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "fail", Description: "Always fails.", InputSchema: object},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "boom"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "image", Description: "A picture and a caption.", InputSchema: object},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "a dot:"},
				&mcp.ImageContent{MIMEType: "image/png", Data: []byte{1, 2, 3}},
			}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "pid", Description: "The server's process id.", InputSchema: object},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: pid}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "crash", Description: "Exits the server mid-call.", InputSchema: object},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if err := record("crash"); err != nil {
				return nil, err
			}
			os.Exit(3)
			return nil, nil
		})
	s.AddTool(&mcp.Tool{Name: "files.read", Description: "A dotted name.", InputSchema: object},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "read"}}}, nil
		})
	return s
}

// runTestServer serves newTestServer on stdio; it is main of a child.
func runTestServer(ledger string) int {
	if err := newTestServer(ledger).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "test MCP server:", err)
		return 1
	}
	return 0
}

// appendLedger appends line to the ledger and syncs it to disk.
func appendLedger(path, line string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, line); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// runs counts the ledger's runs of tool.
func runs(t *testing.T, ledger, tool string) int {
	t.Helper()
	data, err := os.ReadFile(ledger)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.Lines(string(data)) {
		if strings.HasPrefix(line, tool+" ") {
			n++
		}
	}
	return n
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/turnstream/turnstream/pkg/wire"
)

// TestToolsList lists the tools `turnstream tools` would serve: an MCP
// server's alone when one is given, with the demo tools when --demo asks
// for them too.
func TestToolsList(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "shouter", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "shout", Description: "Shouts.", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "HEY"}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(hs.Close)

	tests := []struct {
		name string
		args []string
		want []string
	}{
		{name: "mcp only", args: []string{"--mcp", hs.URL}, want: []string{"shout"}},
		{name: "mcp with a prefix", args: []string{"--mcp", "{url: " + hs.URL + ", prefix: loud_}"}, want: []string{"loud_shout"}},
		{name: "demo too", args: []string{"--mcp", hs.URL, "--demo"}, want: []string{"calculate", "get_time", "shout"}},
		{name: "demo alone", want: []string{"calculate", "get_time"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			args := append([]string{"tools", "--list", "--log-level", "disabled"}, tt.args...)
			if err := dispatch(t.Context(), args, &out); err != nil {
				t.Fatalf("tools %v: %v", tt.args, err)
			}
			var tools []wire.Tool
			if err := json.Unmarshal(out.Bytes(), &tools); err != nil {
				t.Fatalf("tools --list output: %v\n%s", err, out.String())
			}
			var names []string
			for _, tool := range tools {
				names = append(names, tool.Name)
			}
			slices.Sort(names)
			if !slices.Equal(names, tt.want) {
				t.Errorf("tools --list %v = %v; want %v", tt.args, names, tt.want)
			}
		})
	}
}

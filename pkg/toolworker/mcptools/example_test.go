package mcptools_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/turnstream/turnstream/pkg/toolworker/mcptools"
)

type greetIn struct {
	Name string `json:"name"`
}

// ExampleStart serves the tools of a streamable HTTP MCP server under a
// prefix. The definitions go into TurnRequest.Tools; the handlers go to
// toolworker.Serve:
//
//	toolworker.Serve(ctx, js, srv.Handlers(), toolworker.WithIdempotent(srv.Idempotent()...))
func ExampleStart() {
	// An MCP server with one tool, on a loopback endpoint.
	greeter := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "1"}, nil)
	mcp.AddTool(greeter, &mcp.Tool{Name: "greet", Description: "Greets someone.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in greetIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Hello, " + in.Name}}}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return greeter }, nil))
	defer hs.Close()

	srv, err := mcptools.Start(context.Background(), []mcptools.Source{{URL: hs.URL, Prefix: "hello_"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	for _, t := range srv.Tools() {
		fmt.Println(t.Name, "-", t.Description, "- required:", t.Parameters["required"])
	}
	fmt.Println("idempotent:", srv.Idempotent())
	// Output:
	// hello_greet - Greets someone. - required: [name]
	// idempotent: [hello_greet]
}

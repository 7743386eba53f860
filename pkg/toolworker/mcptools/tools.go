package mcptools

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/turnstream/turnstream/pkg/wire"
)

const (
	// maxListPages and maxServerTools bound one server's tool list: a
	// server that pages forever or lists without end is refused.
	maxListPages   = 100
	maxServerTools = 1000
)

// errTooManyTools is a tool list past maxServerTools or maxListPages.
var errTooManyTools = errors.New("mcptools: the tool list is too long")

// listTools reads the server's whole tool list (tools/list), page by page.
func listTools(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	var tools []*mcp.Tool
	cursor := ""
	for range maxListPages {
		res, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, fmt.Errorf("mcptools: listing tools: %w", err)
		}
		tools = append(tools, res.Tools...)
		if len(tools) > maxServerTools {
			return nil, fmt.Errorf("%w: more than %d tools", errTooManyTools, maxServerTools)
		}
		if res.NextCursor == "" {
			return tools, nil
		}
		cursor = res.NextCursor
	}
	return nil, fmt.Errorf("%w: more than %d pages", errTooManyTools, maxListPages)
}

// definition is the turnstream tool that serves t under name: the
// definition a client offers the model in a TurnRequest.
func definition(name string, t *mcp.Tool) wire.Tool {
	def := wire.Tool{Name: name, Description: t.Description}
	if schema, ok := t.InputSchema.(map[string]any); ok {
		def.Parameters = schema
	}
	return def
}

// checkDefinition refuses a definition that a TurnRequest could not
// carry: the checks TurnRequest.Validate makes of each tool (name,
// description size, schema depth, size and "type": "object"), under the
// default limits.
func checkDefinition(def wire.Tool, schema any) error {
	if schema != nil {
		if _, ok := schema.(map[string]any); !ok {
			return errors.New("its input schema is not a JSON object")
		}
	}
	probe := wire.TurnRequest{
		SessionID: "s", TurnID: "t",
		Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "."}},
		Tools: []wire.Tool{def},
	}
	return probe.Validate("s", wire.DefaultLimits)
}

// idempotent reports whether t's calls may run again after their tool
// worker died mid-call: the server hints that it is read-only or
// idempotent (annotations readOnlyHint, idempotentHint). Hints are
// trusted: they come from a server the operator chose to serve.
func idempotent(t *mcp.Tool) bool {
	a := t.Annotations
	return a != nil && (a.ReadOnlyHint || a.IdempotentHint)
}

package mcptools_test

import (
	"context"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/stack"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/toolworker/mcptools"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestMCPToolInATurn: a whole turn on the embedded stack (NATS, worker,
// mock provider) calls a tool of a real MCP server process: the model's
// call reaches the server through the tool subject and its claim, the
// server runs it once, and the answer reports its result.
func TestMCPToolInATurn(t *testing.T) {
	ledger := ledgerPath(t)
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	servers, err := mcptools.Start(ctx, []mcptools.Source{stdio(ledger)}, mcptools.WithLogger(zerolog.New(zerolog.NewTestWriter(t))))
	if err != nil {
		t.Fatalf("Start() = %v", err)
	}
	defer servers.Close()
	var echo []wire.Tool
	for _, tool := range servers.Tools() {
		if tool.Name == "echo" {
			echo = append(echo, tool)
		}
	}
	if len(echo) != 1 {
		t.Fatalf("served tools %v; want echo among them", toolNames(servers.Tools()))
	}
	st, err := stack.Start(ctx, stack.Options{Tools: servers.Handlers(), Log: zerolog.New(zerolog.NewTestWriter(t))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := client.New(st.Conn)
	if err != nil {
		t.Fatal(err)
	}
	turn, err := c.Submit(ctx, wire.TurnRequest{SessionID: "mcp", TurnID: "t1", Tools: echo,
		Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "say hello"}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := turn.Wait(ctx)
	if err != nil || res.Terminal.Type != wire.EventTurnCompleted {
		t.Fatalf("turn: %+v, %v; want completed", res.Terminal, err)
	}
	if !strings.Contains(res.Text, "echo said") {
		t.Errorf("answer %q; want the echo tool's result reported", res.Text)
	}
	if n := runs(t, ledger, "echo"); n != 1 {
		t.Errorf("echo ran %d times in the MCP server; want 1", n)
	}
}

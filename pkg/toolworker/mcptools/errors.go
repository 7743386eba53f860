package mcptools

import "errors"

var (
	// ErrInvalidSource is returned for a source, a --mcp value or a config
	// file that does not describe an MCP server.
	ErrInvalidSource = errors.New("mcptools: invalid MCP server source")
	// ErrInvalidOption is returned by Start when an Option is invalid.
	ErrInvalidOption = errors.New("mcptools: invalid option")
	// ErrNoTools is returned by Start when the servers list no tool that
	// can be served.
	ErrNoTools = errors.New("mcptools: no tool to serve")
	// ErrClosed is the error of a call that found its server closed
	// (Servers.Close) before it was sent: the call did not run.
	ErrClosed = errors.New("mcptools: MCP server closed")
)

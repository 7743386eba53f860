//go:build unix

package mcptools

import "syscall"

// childAttr puts a stdio server in a process group of its own, so that a
// Ctrl-C reaches the tool worker alone: it drains its calls, then closes
// the servers' stdin. A server outliving a killed tool worker reads end of
// file on its stdin and exits, as the MCP stdio transport has it.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

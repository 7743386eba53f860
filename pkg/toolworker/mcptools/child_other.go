//go:build !unix

package mcptools

import "syscall"

// childAttr is nil where there are no process groups.
func childAttr() *syscall.SysProcAttr { return nil }

//go:build !linux

package main

import "syscall"

// childAttr is nil where there is no parent-death signal: the loadtest
// stops its children itself (and reads /proc, so profiles run on Linux).
func childAttr() *syscall.SysProcAttr { return nil }

package main

import "syscall"

// childAttr makes a child die with the loadtest (SIGKILL when its parent
// exits), so that a killed run leaves no process behind.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

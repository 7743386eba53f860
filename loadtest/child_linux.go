package main

import "syscall"

// childAttr makes a child die with the loadtest (SIGKILL when its parent
// exits), so that a killed run leaves no process behind, and puts it in a
// process group of its own: a Ctrl-C reaches the loadtest alone, which
// stops the children in order (the worker before the server).
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

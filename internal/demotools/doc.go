// Package demotools holds the two tools the demo and dev commands serve
// through pkg/toolworker: get_time (the current time in an IANA time zone)
// and calculate (a safe arithmetic evaluator).
//
// It owns their definitions (as offered to the model) and their handlers.
// It must not touch NATS, read the environment or the file system, or
// evaluate anything but arithmetic: calculate parses its own small grammar
// and never hands input to an interpreter.
package demotools

// Package console renders turns and events for people at a terminal: the
// streaming text of a turn, each tool call and result, attempt markers and
// the terminal summary (demo, submit, replay), and one line per audit event
// (tap). It only formats what it is given (Follow pulls a client.Turn's
// updates); it never subscribes or reads a stream itself.
package console

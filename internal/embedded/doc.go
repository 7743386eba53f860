// Package embedded runs an in-process NATS server with JetStream for the
// dev and demo commands and for tests. It is kept apart from internal/bus so
// that packages clients and tool authors import never link the server.
package embedded

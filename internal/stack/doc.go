// Package stack runs the whole of turnstream in one process for `dev`,
// `demo` and `replay`: an embedded NATS server with JetStream, the mock
// provider (unless a config names real ones), a worker and a tool worker
// (the demo tools unless the caller gives its own handlers; a replay also
// builds the worker's adapters itself), each registered as its NATS
// service (turnstream-worker, turnstream-tools: internal/discovery) so
// `nats micro ls` shows them. It owns their goroutines and stops
// them in order: the worker first (it drains, and its running turns still
// call tools and the provider), then the tools, then the provider, then
// the server.
package stack

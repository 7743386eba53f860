// Package stack runs the whole of turnstream in one process for `dev` and
// `demo`: an embedded NATS server with JetStream, the mock provider (unless
// a config names real ones), a worker and the demo tool worker. It owns
// their goroutines and stops them in order: tools and worker first, then
// the provider, then the server.
package stack

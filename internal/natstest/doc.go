// Package natstest starts real, embedded NATS servers with JetStream for
// tests: a single node on a random loopback port with its store in a test
// temp dir, restartable on the same port and store. It never mocks NATS.
package natstest

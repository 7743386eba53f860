// Package natstest starts real, embedded NATS servers with JetStream for
// tests: a single node on a random loopback port with its store in a test
// temp dir, restartable on the same port and store, and a cluster of such
// nodes (routes on loopback, Raft-replicated JetStream) whose nodes a test
// can kill and restart, and a link (a loopback proxy) that holds back what
// a server sends its clients or cuts their connections. It never mocks
// NATS, and everything it starts is shut down when the test ends.
package natstest

// Package deploy holds turnstream's production NATS server configuration
// (nats/nats-server.conf, nats/cluster.conf), an example worker config
// (worker.yaml), a compose stack (compose/) and a Helm chart (helm/), with
// tests that load them with the real nats-server and config parsers, check
// each role's permissions against a running server, lint the Dockerfile at
// the repository root, render the chart, and check every command line and
// probe against the built binary. It has no code of its own: nothing may
// import it, and it must not hold credentials; passwords come from the
// environment.
package deploy

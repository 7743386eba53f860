// Package deploy holds turnstream's production NATS server configuration
// (nats/nats-server.conf, nats/cluster.conf) and an example worker config
// (worker.yaml), with tests that load them with the real nats-server and
// config parsers and check each role's permissions against a running
// server. It has no code of its own: nothing may import it, and it must not
// hold credentials; passwords come from the environment.
package deploy

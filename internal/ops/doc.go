// Package ops is the operations endpoint of a long-running turnstream
// process (`worker`, `tools`, `dev` with --metrics-addr): one HTTP server
// that serves /metrics (a Prometheus gatherer, internal/metrics), /healthz
// (liveness: 200 while the process serves) and /readyz (readiness: 200
// when the process's checks pass, else 503 with the first failing check's
// short reason), and the readiness checks the commands compose: the NATS
// connection (Connected) and a tool worker's tool bindings (Tools).
//
// It must not define metrics (internal/metrics does) or decide what a
// worker's readiness is (worker.Worker.Ready does): it serves what it is
// given.
package ops

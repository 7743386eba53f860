// Package chaos proves, by killing processes, what turnstream promises: a
// worker, a tool worker or a NATS node may die at any instruction and no
// turn is lost, no message written twice, no non-idempotent tool effect
// done twice, and a zombie worker that wakes late writes nothing anyone
// reads.
//
// It is a test package. Workers and tool workers are separate processes
// (this package's test binary re-executed in a child role), the provider is
// the mock with latency, and the tools keep a side-effect ledger, fsynced
// before each effect. After each scenario an oracle reads the streams and
// the ledger and checks:
//
//   - every turn has exactly one terminal event;
//   - no message is written twice, and the session log has no gap;
//   - no non-idempotent effect happened twice;
//   - every completed turn's calls ran exactly once;
//   - no session's turns interleave, and they ran in submission order;
//   - followers saw at most one completed attempt per step (and exactly one
//     for every step the provider answered).
//
// The small version runs in CI with the other tests:
//
//	go test -race ./loadtest/chaos
//
// The full version (300 turns with 30+ worker and 5+ tool-worker kills,
// 5 runs of every crash point, 100 turns over two NATS restarts and over
// two kills of the session log's leader in a 3-node cluster) is opt-in:
//
//	go test ./loadtest/chaos -chaos.full -timeout 60m -v
//
// Every process it starts talks to loopback only and is stopped when its
// test ends; every loop is bounded.
package chaos

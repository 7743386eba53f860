// Command loadtest drives turnstream with many concurrent turns and reports
// what a client sees, next to what raw JetStream does on the same server.
//
//	go run ./loadtest [--turns 200] [--concurrency 32] [--tools] [--latency 0] [--json FILE]
//	go run ./loadtest --profile quick|full [--rounds R] [--in-flight N] [--follower-steps A,B] [--session-turns N] [--json FILE] [--svg FILE]
//	go run ./loadtest --hostile
//
// By default it starts the whole stack in its own process (an embedded NATS
// server, the mock provider with --latency before each streamed frame, a
// worker and the demo tool worker); with --nats-url it connects to a running
// server instead and assumes a worker, a provider and (for --tools) the demo
// tools are serving there.
//
// It submits --turns turns through pkg/client, each in its own session, at
// most --concurrency in flight, and follows each to its terminal event. Per
// turn it measures the time from submitting to the first chunk and to the
// terminal event, the chunks, messages and events received, and the outcome
// (completed, failed or rejected with the reason, or a client error). The
// report gives throughput (turns/s, chunks/s, records/s), latency
// percentiles (p50, p90, p99, max) and failures by reason.
//
// Then, on the same server and connection, it measures a baseline: as many
// raw JetStream messages as the turns produced chunks, with the same headers
// and the same average payload size, published asynchronously to a stream
// configured like TURN_CHUNKS and read back by an ordered consumer, and, as
// the worker also stores each frame's provider bytes on TURN_RAW, one per
// frame shaped like the run's raw frames, published to a stream configured
// like TURN_RAW and not read. The ratio of the baseline's msgs/s to
// turnstream's chunks/s is what a chunk costs in turnstream (provider
// stream, turn loop, session log, events, and a client following three
// streams per turn) over the bare publish and consume of the bytes.
//
// With --profile quick (under 5 minutes on 2 cores) or --profile full it
// measures issue 11's table instead, with every part in a process of its
// own (this program re-executed in a child role, see child.go and
// roles.go): an embedded nats-server, the mock provider, a worker, the
// demo tools, the bare openai-go client (the baseline) and a raw-NATS
// pipeline (openai-go plus bare JetStream publishes). In interleaved
// rounds it runs 70-chunk turns at 8 in flight and 16-chunk turns at 8
// and at 1 in flight on each path (bare, raw NATS, turnstream with a core
// NATS subscriber, turnstream through pkg/client), with each process's CPU
// time from /proc and the NATS round trip timed in the same round; then
// one session of turns with the demo tools (latency growth), and many slow
// turns in flight at once in a fresh worker (its RSS per turn, and as many
// pkg/client followers). Every turn's delivery is checked (contiguous
// chunks ended by their marker, one terminal event, nothing re-run); the
// run exits 1 unless it is exact. It prints a Markdown table (figure,
// median [min-max], target, met?) and writes --json and --svg (see
// profile.go and README.md).
//
// With --hostile it runs the bounded-memory check instead: a worker process
// (this program re-executed) takes request bombs, provider floods, costly
// schemas and huge tool results among valid turns, and its peak RSS and CPU
// are reported next to the same worker serving the valid turns alone (see
// hostile.go and README.md).
//
// It talks to loopback (or the given server) only, every loop is bounded
// by the turn count and the per-turn timeout, and every process it starts
// is stopped when it ends (and killed with it, by the parent-death signal,
// if it is killed).
package main

// Package nodetest runs Node.js scripts for tests: the examples in
// examples/nodejs, against an embedded NATS server, as any-language
// clients and tool workers of turnstream would run. It finds node (a test
// is skipped without it, unless TURNSTREAM_REQUIRE_NODE=1 makes that a
// failure), installs a directory's locked npm dependencies once (npm ci),
// and runs scripts with an environment and a bounded timeout, capturing
// their output and killing them when the test ends. It must not start
// anything it does not stop, nor reach the network except npm's registry
// for npm ci.
package nodetest

package mcptools_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine the servers, the SDK, nats.go and the embedded server
// start must be gone when the tests end.
func TestMain(m *testing.M) {
	if ledger := os.Getenv(serverLedgerEnv); ledger != "" {
		os.Exit(runTestServer(ledger)) // this test binary re-executed as a test MCP server
	}
	goleak.VerifyTestMain(m)
}

package toolworker_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine Serve, nats.go and the embedded server start must be gone
// when the tests end: no exceptions are needed.
func TestMain(m *testing.M) {
	if os.Getenv(childNATSEnv) != "" {
		os.Exit(runChildToolWorker()) // this test binary re-executed as a tool worker process
	}
	goleak.VerifyTestMain(m)
}

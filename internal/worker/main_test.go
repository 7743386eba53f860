package worker_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(childWorkerEnv) != "" {
		os.Exit(runChildWorker()) // this test binary re-executed as a worker process
	}
	goleak.VerifyTestMain(m,
		// net/http keeps idle keep-alive connections to the mock provider.
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	)
}

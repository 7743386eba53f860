package discovery_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine a service, a worker, a tool worker, nats.go and the
// embedded server start must be gone when the tests end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// net/http keeps idle keep-alive connections to the mock provider.
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	)
}

package bus_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine the bus starts (an ack tracker's sweeper among them)
// ends with what owns it: here, with the test's connections.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// nats-server's and nats.go's pollers of closing sockets.
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}

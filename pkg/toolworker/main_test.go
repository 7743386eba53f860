package toolworker_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine Serve, nats.go and the embedded server start must be gone
// when the tests end: no exceptions are needed.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

package main

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if code, ok := childMain(); ok {
		os.Exit(code) // a process of a hostile or profile run: this binary re-executed
	}
	goleak.VerifyTestMain(m,
		// net/http keeps idle keep-alive connections to the mock provider.
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	)
}

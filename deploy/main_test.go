package deploy

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// net/http keeps idle keep-alive connections to the mock provider.
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		// The binary the packaging tests build (packaging_test.go).
		goleak.Cleanup(func(int) {
			if binDir != "" {
				os.RemoveAll(binDir) //nolint:errcheck // a temporary directory
			}
		}),
	)
}

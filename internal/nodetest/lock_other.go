//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package nodetest

import "testing"

// lock does nothing where flock is missing: run npm ci before tests that
// run in parallel.
func lock(testing.TB, string) (unlock func()) { return func() {} }

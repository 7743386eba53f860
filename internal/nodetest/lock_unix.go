//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package nodetest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// lock holds an exclusive lock on dir's install, so that test packages
// run in parallel do not run npm ci in the same directory at once.
func lock(t testing.TB, dir string) (unlock func()) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, ".nodetest.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("nodetest: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatalf("nodetest: lock %s: %v", f.Name(), err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing releases it too
		f.Close()
	}
}

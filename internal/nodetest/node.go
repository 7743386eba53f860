package nodetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// RequireEnv names the variable that makes a missing node a failure
// instead of a skip ("1"); CI sets it.
const RequireEnv = "TURNSTREAM_REQUIRE_NODE"

// installTimeout bounds npm ci.
const installTimeout = 5 * time.Minute

// Node returns the path of node, skipping the test when it is not on PATH
// (failing it when RequireEnv is "1").
func Node(t testing.TB) string {
	t.Helper()
	return lookPath(t, "node")
}

func lookPath(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("nodetest: %s is not on PATH and %s=1: install Node.js and npm (.ci/run does, with apt-get)", name, RequireEnv)
	}
	t.Skipf("nodetest: %s is not on PATH: install Node.js and npm to run this test (set %s=1 to make this a failure)", name, RequireEnv)
	return ""
}

// installed marks a finished npm ci: npm writes it last.
const installed = "node_modules/.package-lock.json"

// NPMCI installs the locked dependencies of the package in dir (its
// package-lock.json) with npm ci, unless they are installed already. An
// install that fails, such as when the npm registry is out of reach, fails
// the test with npm's output and what to do.
func NPMCI(t testing.TB, dir string) {
	t.Helper()
	Node(t)
	npm := lookPath(t, "npm")
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	unlock := lock(t, dir)
	defer unlock()
	if _, err := os.Stat(filepath.Join(dir, installed)); err == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--fetch-retries=1", "--fetch-timeout=60000")
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		t.Fatalf("nodetest: npm ci in %s failed (%v): is the npm registry reachable? Run `npm ci` in %s by hand once it is.\n%s",
			dir, err, dir, out.String())
	}
}

// Process is a running script.
type Process struct {
	name           string
	cmd            *exec.Cmd
	stdout, stderr buffer
	done           chan struct{}
	err            error // the exit, set before done is closed
}

// Start runs `node script args...` in dir with env added to the
// environment. The process is killed when the test ends, if it is still
// running, and its output logged if the test failed.
func Start(t testing.TB, dir string, env []string, script string, args ...string) *Process {
	t.Helper()
	node := Node(t)
	cmd := exec.Command(node, append([]string{script}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	p := &Process{name: script, cmd: cmd, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &p.stdout, &p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("nodetest: start node %s: %v", script, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("node %s stdout:\n%s\nstderr:\n%s", script, p.Stdout(), p.Stderr())
		}
	})
	return p
}

// Run runs `node script args...` as Start does and waits for it to exit,
// killing it after timeout. It returns the process, whose output is
// complete, and its exit error (an *exec.ExitError for a non-zero status).
func Run(t testing.TB, dir string, env []string, timeout time.Duration, script string, args ...string) (*Process, error) {
	t.Helper()
	p := Start(t, dir, env, script, args...)
	return p, p.Wait(timeout)
}

// Wait waits for the process to exit and returns its exit error, killing
// it after timeout (then the error says so).
func (p *Process) Wait(timeout time.Duration) error {
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		p.Kill()
		return fmt.Errorf("nodetest: node %s did not exit within %s: killed", p.name, timeout)
	}
}

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Kill kills the process, if it is still running, and waits for it.
func (p *Process) Kill() {
	if !p.Exited() {
		if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return
		}
	}
	<-p.done
}

// Stdout is what the process wrote to its standard output so far.
func (p *Process) Stdout() string { return p.stdout.String() }

// Stderr is what the process wrote to its standard error so far.
func (p *Process) Stderr() string { return p.stderr.String() }

// WaitOutput waits until the process's standard output contains want, for
// at most timeout; it fails the test if the process exits or the time
// runs out first.
func (p *Process) WaitOutput(t testing.TB, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(p.Stdout(), want) {
		if p.Exited() {
			t.Fatalf("nodetest: node %s exited (%v) before printing %q\nstdout:\n%s\nstderr:\n%s", p.name, p.err, want, p.Stdout(), p.Stderr())
		}
		if time.Now().After(deadline) {
			t.Fatalf("nodetest: node %s did not print %q within %s\nstdout:\n%s\nstderr:\n%s", p.name, want, timeout, p.Stdout(), p.Stderr())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// buffer is an output buffer safe for the writing process and a reading
// test.
type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

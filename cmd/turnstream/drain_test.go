package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/pkg/wire"
)

// envMainArgs makes this test binary run `turnstream` with the given
// arguments (separated by newlines) instead of the tests.
const envMainArgs = "TURNSTREAM_TEST_MAIN_ARGS"

func TestMain(m *testing.M) {
	if args := os.Getenv(envMainArgs); args != "" {
		os.Args = append([]string{"turnstream"}, strings.Split(args, "\n")...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSecondSignalExitsAtOnce: a worker process given SIGTERM while a turn
// runs drains (it stops fetching and waits for the turn, up to its drain
// timeout of a minute here); a second SIGTERM ends it at once.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	srv := natstest.Start(t)
	hs := httptest.NewServer(mockllm.New(mockllm.Default(mockllm.DefaultOptions{})))
	t.Cleanup(hs.Close)
	cfg := mockConfig(t, hs.URL+"/v1", "{drain_timeout: 1m, tool_timeout: 1m}")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envMainArgs+"="+strings.Join([]string{"worker", "--config", cfg, "--nats-url", srv.URL()}, "\n"))
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill() //nolint:errcheck // it may have exited
		<-done
		if t.Failed() {
			t.Logf("worker stderr:\n%s", stderr.String())
		}
	})
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting until %s", what)
			}
		}
	}
	_, js := srv.JetStream()
	waitFor("the worker is serving", func() bool { return strings.Contains(stderr.String(), "worker started") })

	// A turn that waits on a tool nobody serves: it runs until its tool
	// timeout, a minute.
	req := `{"session_id":"drain","turn_id":"t1","input":[{"role":"user","content":"go"}],"tools":[{"name":"nobody","description":"d","parameters":{"type":"object"}}]}`
	if _, err := js.Publish(t.Context(), "turn.submit.drain", []byte(req)); err != nil {
		t.Fatal(err)
	}
	waitFor("the turn waits on its tool", func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		s, err := js.Stream(ctx, wire.StreamTools)
		if err != nil {
			return false
		}
		_, err = s.GetLastMsgForSubject(ctx, "turn.tool.nobody")
		return err == nil
	})

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor("the worker drains", func() bool { return strings.Contains(stderr.String(), "worker draining") })
	select {
	case err := <-done:
		done <- err
		t.Fatalf("the worker exited on the first signal (%v); want it draining its running turn", err)
	default:
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		done <- err
	case <-time.After(20 * time.Second): // a bound, not a speed: the drain would take a minute
		t.Fatal("the worker did not exit on the second signal")
	}
}

package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
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
	cfg := filepath.Join(t.TempDir(), "worker.yaml")
	yaml := `providers:
  - {name: mock, api: openai_chat_completions, base_url: "` + hs.URL + `/v1", api_key_env: TURNSTREAM_TEST_KEY}
models:
  - {provider: mock, name: mock-1, supports_tools: true, context_tokens: 100000}
routes:
  - {name: default, targets: [{provider: mock, model: mock-1}]}
worker: {drain_timeout: 1m, tool_timeout: 1m}
`
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	worker := startChild(t, []string{"TURNSTREAM_TEST_KEY=k"}, "worker", "--config", cfg, "--nats-url", srv.URL())
	stderr := worker.stderr
	_, js := srv.JetStream()
	waitFor(t, "the worker is serving", func() bool { return strings.Contains(stderr.String(), "worker started") })

	// A turn that waits on a tool nobody serves: it runs until its tool
	// timeout, a minute.
	req := `{"session_id":"drain","turn_id":"t1","input":[{"role":"user","content":"go"}],"tools":[{"name":"nobody","description":"d","parameters":{"type":"object"}}]}`
	if _, err := js.Publish(t.Context(), "turn.submit.drain", []byte(req)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the turn waits on its tool", func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		s, err := js.Stream(ctx, wire.StreamTools)
		if err != nil {
			return false
		}
		_, err = s.GetLastMsgForSubject(ctx, "turn.tool.nobody")
		return err == nil
	})

	worker.signal(t, syscall.SIGTERM)
	waitFor(t, "the worker drains", func() bool { return strings.Contains(stderr.String(), "worker draining") })
	worker.running(t)
	worker.signal(t, syscall.SIGTERM)
	// A bound, not a speed: the drain would take a minute.
	if code := worker.exit(t, 20*time.Second); code != exitInterrupted {
		t.Errorf("the worker exited %d on the second signal; want %d", code, exitInterrupted)
	}
}

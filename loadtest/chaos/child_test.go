package chaos

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/worker"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// A child process is this test binary run with envRole set.
const (
	envRole     = "TURNSTREAM_CHAOS_ROLE" // "worker" or "tools"
	envNATS     = "TURNSTREAM_CHAOS_NATS"
	envMock     = "TURNSTREAM_CHAOS_MOCK"
	envReplicas = "TURNSTREAM_CHAOS_REPLICAS"
	// envCrash names a probe point: the worker kills itself (SIGKILL) the
	// first time a delivery reaches it.
	envCrash = "TURNSTREAM_CHAOS_CRASH"
	// envPause names a probe point and a file: the worker writes the file
	// when a delivery reaches the point, then lingers there so the test
	// can SIGSTOP it.
	envPause = "TURNSTREAM_CHAOS_PAUSE"
	// envLedger is the tools' side-effect ledger file.
	envLedger = "TURNSTREAM_CHAOS_LEDGER"
	// envHold makes a tool worker block forever inside every call, after
	// its start line: it is killed mid-call.
	envHold = "TURNSTREAM_CHAOS_HOLD"
)

// Timings of the children: short, so kills are noticed fast.
const (
	workerAckWait = 2 * time.Second
	toolAckWait   = time.Second
	toolLatency   = 300 * time.Millisecond
)

// The tools every chaos turn offers.
const (
	toolEffect = "effect" // not idempotent: must never run twice
	toolIdem   = "idem"   // idempotent: may run again after its worker died
)

func TestMain(m *testing.M) {
	switch os.Getenv(envRole) {
	case "worker":
		os.Exit(runWorker())
	case "tools":
		os.Exit(runTools())
	}
	os.Exit(m.Run())
}

func childLog() zerolog.Logger {
	return zerolog.New(os.Stderr).Level(zerolog.InfoLevel).With().Int("pid", os.Getpid()).Logger()
}

// runWorker is a worker process.
func runWorker() int {
	nc, err := nats.Connect(os.Getenv(envNATS), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos worker:", err)
		return 1
	}
	defer nc.Close()
	cfg := config.Mock(os.Getenv(envMock))
	cfg.Worker.AckWait = config.Duration(workerAckWait)
	cfg.Worker.DrainTimeout = config.Duration(2 * time.Second)
	cfg.Worker.ToolTimeout = config.Duration(30 * time.Second)
	// The workers create the tool consumers, with this AckWait.
	cfg.Worker.ToolAckWait = config.Duration(toolAckWait)
	if os.Getenv(envReplicas) == "3" {
		cfg.NATS.Replicas = 3
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	crash := os.Getenv(envCrash)
	pausePoint, pauseFile, _ := strings.Cut(os.Getenv(envPause), "=")
	var pauseOnce sync.Once
	probe := func(point string) {
		switch point {
		case crash:
			fmt.Fprintf(os.Stderr, "chaos worker %d: crashing at %s\n", os.Getpid(), point)
			syscall.Kill(os.Getpid(), syscall.SIGKILL) //nolint:errcheck // dies here
			select {}
		case pausePoint:
			pauseOnce.Do(func() {
				os.WriteFile(pauseFile, nil, 0o600) //nolint:errcheck // the test waits for it
				time.Sleep(3 * time.Second)         // the test stops the process here
			})
		}
	}
	w, err := worker.New(ctx, worker.Options{Conn: nc, Config: cfg, Log: childLog(), Probe: probe})
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos worker:", err)
		return 1
	}
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "chaos worker:", err)
		return 1
	}
	return 0
}

// runTools is a tool worker process serving effect and idem. Each call
// appends "start" to the ledger, waits toolLatency, appends "effect" (the
// side effect itself), each line fsynced before the next step.
func runTools() int {
	nc, err := nats.Connect(os.Getenv(envNATS), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos tools:", err)
		return 1
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos tools:", err)
		return 1
	}
	ledger, err := os.OpenFile(os.Getenv(envLedger), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos tools:", err)
		return 1
	}
	defer ledger.Close()
	var mu sync.Mutex
	write := func(line string) error {
		mu.Lock()
		defer mu.Unlock()
		if _, err := ledger.WriteString(line + "\n"); err != nil {
			return err
		}
		return ledger.Sync()
	}
	hold := os.Getenv(envHold) != ""
	handler := func(kind string) toolworker.Handler {
		return func(ctx context.Context, call wire.ToolCall) (toolworker.Result, error) {
			id := fmt.Sprintf("%s %s %s %s %d", kind, call.SessionID, call.TurnID, call.CallID, os.Getpid())
			if err := write("start " + id); err != nil {
				return toolworker.Result{}, err
			}
			if hold {
				select {} // killed mid-call
			}
			t := time.NewTimer(toolLatency)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				return toolworker.Result{}, ctx.Err()
			}
			if err := write("effect " + id); err != nil {
				return toolworker.Result{}, err
			}
			return toolworker.Result{Content: kind + " done"}, nil
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	err = toolworker.Serve(ctx, js, map[string]toolworker.Handler{toolEffect: handler(toolEffect), toolIdem: handler(toolIdem)},
		toolworker.WithIdempotent(toolIdem), toolworker.WithLogger(childLog()),
		toolworker.WithDrainTimeout(2*time.Second))
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos tools:", err)
		return 1
	}
	return 0
}

// proc is a child process.
type proc struct {
	role   string
	cmd    *exec.Cmd
	done   chan struct{}
	stderr *syncBuffer
}

// start runs a child in role with the extra environment env. It is
// killed when the test ends, if still running.
func start(t *testing.T, role string, env ...string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), envRole+"="+role), env...)
	p := &proc{role: role, cmd: cmd, done: make(chan struct{}), stderr: &syncBuffer{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", role, err)
	}
	go func() { cmd.Wait(); close(p.done) }() //nolint:errcheck // the exit is observed through done
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("%s %d stderr (last warnings):\n%s", role, cmd.Process.Pid, lastLines(warnings(p.stderr.String()), 15))
		}
	})
	return p
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits for the exit.
func (p *proc) kill() {
	p.cmd.Process.Signal(syscall.SIGCONT) //nolint:errcheck // a stopped process must be able to die
	p.cmd.Process.Kill()                  //nolint:errcheck // it may have exited
	<-p.done
}

func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v to %s %d: %v", sig, p.role, p.pid(), err)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() > 1<<20 {
		s.b.Reset() // bounded: keep the recent lines
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// warnings keeps the lines of a child's log that are not info.
func warnings(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.Contains(l, `"level":"info"`) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// A profile run (--profile) puts every part in a process of its own: this
// program (or the test binary) re-executed with roleEnv naming the part and
// childConfigEnv its settings, as JSON. A child prints one JSON line on
// stdout when it is ready (childReady), serves until SIGTERM or Ctrl-C,
// and dies with its parent (childAttr).
const (
	roleEnv        = "TURNSTREAM_LOADTEST_ROLE"
	childConfigEnv = "TURNSTREAM_LOADTEST_CHILD"
	// cpuProfileEnv, when set to a directory, has every child write a CPU
	// profile of its whole life there, as <role>-<pid>.prof (go tool pprof).
	cpuProfileEnv = "TURNSTREAM_LOADTEST_CPUPROFILE"
	// logDirEnv, when set to a directory, has every child log warnings
	// and errors there too, as <role>-<pid>.log (by default a child logs
	// errors only, and the parent keeps the tail).
	logDirEnv = "TURNSTREAM_LOADTEST_LOGS"
)

// startCPUProfile profiles this process into path until the returned
// function is called.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close() //nolint:errcheck // the error above is the one to report
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close() //nolint:errcheck // best effort: a profile for reading
	}, nil
}

// The roles.
const (
	roleNATS   = "nats"   // the embedded nats-server
	roleMock   = "mock"   // the mock provider, with the hold gate
	roleWorker = "worker" // a turnstream worker
	roleTools  = "tools"  // the demo tool worker
	roleBare   = "bare"   // the bare openai-go client: the baseline
	roleRaw    = "raw"    // openai-go plus bare JetStream publishes: the raw-NATS baseline
)

// childConfig is what a child is told.
type childConfig struct {
	NATSURL string `json:"nats_url,omitempty"`
	MockURL string `json:"mock_url,omitempty"`
	// StoreDir is the nats child's JetStream store.
	StoreDir string `json:"store_dir,omitempty"`
	// FrameLatency is the mock's delay before each streamed frame.
	FrameLatency time.Duration `json:"frame_latency,omitempty"`
	// HoldMax bounds how long the mock holds a held answer.
	HoldMax time.Duration `json:"hold_max,omitempty"`
	// Concurrency is the worker's (0: the default, 64).
	Concurrency int `json:"concurrency,omitempty"`
	// TurnBound is the worker's wall-clock budget and the provider idle
	// timeout (0: the defaults, 2m and 60s).
	TurnBound time.Duration `json:"turn_bound,omitempty"`
	// ContextTokens is the mock model's context window (0: the default,
	// 128,000 tokens).
	ContextTokens int `json:"context_tokens,omitempty"`
}

// childReady is the line a child prints when it is ready.
type childReady struct {
	URL string `json:"url,omitempty"`
	PID int    `json:"pid"`
}

// roles maps each role to its main; they are in roles.go.
var roles = map[string]func(ctx context.Context, c childConfig, ready func(url string)) error{
	roleNATS:   natsMain,
	roleMock:   mockMain,
	roleWorker: workerMain,
	roleTools:  toolsMain,
	roleBare:   bareMain,
	roleRaw:    rawMain,
}

// childMain runs the child role this process was started in, if any, and
// returns its exit code.
func childMain() (code int, ok bool) {
	if os.Getenv(childNATSEnv) != "" {
		return childWorker(), true // a worker process of a --hostile run
	}
	role := os.Getenv(roleEnv)
	if role == "" {
		return 0, false
	}
	roleMain := roles[role]
	if roleMain == nil {
		fmt.Fprintf(os.Stderr, "loadtest: unknown child role %q\n", role)
		return 2, true
	}
	var c childConfig
	if err := json.Unmarshal([]byte(os.Getenv(childConfigEnv)), &c); err != nil {
		fmt.Fprintf(os.Stderr, "loadtest %s: %s: %v\n", role, childConfigEnv, err)
		return 2, true
	}
	if dir := os.Getenv(cpuProfileEnv); dir != "" {
		stopProfile, err := startCPUProfile(filepath.Join(dir, role+"-"+strconv.Itoa(os.Getpid())+".prof"))
		if err != nil {
			fmt.Fprintf(os.Stderr, "loadtest %s: %s: %v\n", role, cpuProfileEnv, err)
			return 2, true
		}
		defer stopProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	var once sync.Once
	ready := func(url string) {
		once.Do(func() {
			b, _ := json.Marshal(childReady{URL: url, PID: os.Getpid()}) // plain fields: cannot fail
			os.Stdout.Write(append(b, '\n'))                             //nolint:errcheck // the parent reads it or is gone
		})
	}
	if err := roleMain(ctx, c, ready); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(os.Stderr, "loadtest %s: %v\n", role, err)
		return 1, true
	}
	return 0, true
}

// child is a running child process.
type child struct {
	role   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *tailBuffer
	ready  childReady
	done   chan struct{}
	err    error // of Wait, once done is closed
	// stopping is set by stop: the end that follows is no death.
	stopping atomic.Bool
}

// watch calls died (once, on its own goroutine) if the child ends
// without being stopped.
func (c *child) watch(died func(error)) {
	go func() {
		<-c.done
		if !c.stopping.Load() {
			died(c.alive())
		}
	}()
}

// childStartTimeout bounds a child's start, to its ready line.
const childStartTimeout = 60 * time.Second

// startChild starts role and waits for its ready line.
func startChild(ctx context.Context, role string, c childConfig) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("loadtest: %w", err)
	}
	cfg, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("loadtest: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), roleEnv+"="+role, childConfigEnv+"="+string(cfg))
	cmd.SysProcAttr = childAttr()
	ch := &child{role: role, cmd: cmd, stderr: &tailBuffer{max: 64 << 10}, done: make(chan struct{})}
	cmd.Stderr = ch.stderr
	if ch.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("loadtest: %s: %w", role, err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("loadtest: %s: %w", role, err)
	}
	ch.stdout = bufio.NewReaderSize(out, 1<<20)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("loadtest: start the %s process: %w", role, err)
	}
	go func() { ch.err = cmd.Wait(); close(ch.done) }()
	line := make(chan error, 1)
	go func() {
		b, err := ch.stdout.ReadBytes('\n')
		if err == nil {
			err = json.Unmarshal(b, &ch.ready)
		}
		line <- err
	}()
	select {
	case err = <-line:
	case <-time.After(childStartTimeout):
		err = errors.New("no ready line in time")
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		ch.stop()
		return nil, fmt.Errorf("loadtest: the %s process did not start (%v): %s", role, err, ch.stderr.last(20))
	}
	return ch, nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// alive reports an error if the child has exited.
func (c *child) alive() error {
	select {
	case <-c.done:
		return fmt.Errorf("loadtest: the %s process died (%v): %s", c.role, c.err, c.stderr.last(20))
	default:
		return nil
	}
}

// sample reads the child's CPU time and memory from /proc.
func (c *child) sample() (procSample, error) {
	if err := c.alive(); err != nil {
		return procSample{}, err
	}
	return readProc(c.pid())
}

// childStopTimeout bounds a child's graceful stop; then it is killed.
const childStopTimeout = 40 * time.Second

// stop ends the child: its stdin closed and SIGTERM, then SIGKILL after
// childStopTimeout. It is idempotent.
func (c *child) stop() {
	c.stopping.Store(true)
	select {
	case <-c.done:
		return
	default:
	}
	c.stdin.Close()                       //nolint:errcheck // the bare client reads it: EOF ends it
	c.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may have exited
	select {
	case <-c.done:
	case <-time.After(childStopTimeout):
		c.cmd.Process.Kill() //nolint:errcheck // it may have exited
		<-c.done
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) last(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return lastLines(string(t.b), n)
}

// procSample is a process's CPU time and memory, from /proc.
type procSample struct {
	// CPU is user plus system time (utime + stime of /proc/<pid>/stat).
	CPU time.Duration
	// RSS and HWM are the resident set and its peak (VmRSS and VmHWM of
	// /proc/<pid>/status), in bytes.
	RSS, HWM int64
}

// userHZ is the unit of /proc's CPU times: USER_HZ, what `getconf
// CLK_TCK` prints, 100 on every Linux ABI.
const userHZ = 100

// readProc samples process pid.
func readProc(pid int) (procSample, error) {
	var s procSample
	dir := "/proc/" + strconv.Itoa(pid) + "/"
	stat, err := os.ReadFile(dir + "stat")
	if err != nil {
		return s, fmt.Errorf("loadtest: CPU time: %w", err)
	}
	ticks, err := parseStatCPU(stat)
	if err != nil {
		return s, err
	}
	s.CPU = time.Duration(ticks) * time.Second / userHZ
	status, err := os.ReadFile(dir + "status")
	if err != nil {
		return s, fmt.Errorf("loadtest: memory: %w", err)
	}
	s.RSS, s.HWM = parseStatusMemory(status)
	return s, nil
}

// parseStatCPU returns utime + stime, in clock ticks, from the contents of
// /proc/<pid>/stat: the 14th and 15th fields, counted after the command
// name in parentheses (which may hold spaces and parentheses itself).
func parseStatCPU(stat []byte) (int64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("loadtest: /proc stat: no command name")
	}
	// Fields from the 3rd (state) on.
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("loadtest: /proc stat: %d fields after the command name", len(fields))
	}
	ut, err1 := strconv.ParseInt(fields[11], 10, 64)
	st, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("loadtest: /proc stat: %w", err)
	}
	return ut + st, nil
}

// parseStatusMemory returns VmRSS and VmHWM, in bytes, from the contents
// of /proc/<pid>/status (0 when absent, as for a zombie).
func parseStatusMemory(status []byte) (rss, hwm int64) {
	for line := range strings.SplitSeq(string(status), "\n") {
		name, v, ok := strings.Cut(line, ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			continue
		}
		if name == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	return rss, hwm
}

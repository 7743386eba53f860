package toolworker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	ossignal "os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// A child tool worker is this test binary run with these variables. It
// serves the tool "lookup" until it is killed or gets SIGTERM; its handler
// appends "<pid> <call_id>" to the ledger file, fsynced, before it has any
// effect (returns, or blocks), so the ledger counts every run a crash could
// have left half done.
const (
	childNATSEnv       = "TURNSTREAM_TEST_CHILD_NATS"
	childLedgerEnv     = "TURNSTREAM_TEST_CHILD_LEDGER"
	childModeEnv       = "TURNSTREAM_TEST_CHILD_MODE"
	childIdempotentEnv = "TURNSTREAM_TEST_CHILD_IDEMPOTENT"
)

// Modes of a child's handler.
const (
	// modeFinish answers "ran in <pid>".
	modeFinish = "finish"
	// modeBlock blocks until the process dies (or the call is cancelled).
	modeBlock = "block"
	// modeKillAfterDone answers as modeFinish, and the process kills
	// itself (SIGKILL) once the result is recorded in the claim, before it
	// is published.
	modeKillAfterDone = "kill-after-done"
	// modeLinger waits until the ledger's ".release" file exists (or the
	// call is cancelled), then answers "late result from <pid>".
	modeLinger = "linger"
)

// childAckWait is the AckWait of the children's tool consumer: short, so
// a dead child's call is redelivered quickly.
const childAckWait = time.Second

func runChildToolWorker() int {
	ledger, mode := os.Getenv(childLedgerEnv), os.Getenv(childModeEnv)
	pid := strconv.Itoa(os.Getpid())
	if mode == modeKillAfterDone {
		toolworker.SetClaimDoneHook(func(wire.ToolCall) {
			syscall.Kill(os.Getpid(), syscall.SIGKILL) //nolint:errcheck // dies here
			select {}
		})
	}
	handler := func(ctx context.Context, call wire.ToolCall) (toolworker.Result, error) {
		if err := appendLedger(ledger, pid+" "+call.CallID); err != nil {
			return toolworker.Result{}, err
		}
		switch mode {
		case modeBlock:
			<-ctx.Done()
			return toolworker.Result{}, ctx.Err()
		case modeLinger:
			for {
				if _, err := os.Stat(ledger + ".release"); err == nil {
					return toolworker.Result{Content: "late result from " + pid}, nil
				}
				select {
				case <-ctx.Done():
					return toolworker.Result{}, ctx.Err()
				case <-time.After(10 * time.Millisecond):
				}
			}
		}
		return toolworker.Result{Content: "ran in " + pid}, nil
	}

	nc, err := nats.Connect(os.Getenv(childNATSEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child tool worker:", err)
		return 1
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child tool worker:", err)
		return 1
	}
	ctx, stop := ossignal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	opts := []toolworker.Option{
		toolworker.WithLogger(zerolog.New(os.Stderr).Level(zerolog.InfoLevel)),
		// One call at a time: a stopped child holds no pull request that
		// the server could hand a redelivery to.
		toolworker.WithConcurrency(1),
	}
	if os.Getenv(childIdempotentEnv) != "" {
		opts = append(opts, toolworker.WithIdempotent(tool))
	}
	if err := toolworker.Serve(ctx, js, map[string]toolworker.Handler{tool: handler}, opts...); err != nil {
		fmt.Fprintln(os.Stderr, "child tool worker:", err)
		return 1
	}
	return 0
}

// appendLedger appends line to the ledger and syncs it to disk.
func appendLedger(path, line string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, line); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readLedger returns the ledger's lines.
func readLedger(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(string(data), " ", "/"))
}

// child is a tool worker process started by startChild.
type child struct {
	cmd    *exec.Cmd
	done   chan struct{} // closed when the process has exited
	err    error         // cmd.Wait's result, once done is closed
	stderr *syncBuffer
}

func (c *child) pid() string { return strconv.Itoa(c.cmd.Process.Pid) }

func startChild(t *testing.T, e *env, ledger, mode string, idempotent bool) *child {
	t.Helper()
	e.ensureTool(t, tool) // as the workers have, at the tool's first call
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childNATSEnv+"="+e.srv.URL(), childLedgerEnv+"="+ledger, childModeEnv+"="+mode)
	if idempotent {
		cmd.Env = append(cmd.Env, childIdempotentEnv+"=1")
	}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, done: make(chan struct{}), stderr: stderr}
	go func() { c.err = cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT) //nolint:errcheck // a stopped child cannot die
		cmd.Process.Kill()                  //nolint:errcheck // may have exited
		<-c.done
		if t.Failed() {
			t.Logf("child tool worker %d stderr:\n%s", cmd.Process.Pid, stderr.String())
		}
	})
	eventually(t, "the child tool worker to serve", func() bool {
		return strings.Contains(stderr.String(), "serving tool")
	})
	return c
}

// kill kills the child with SIGKILL and waits for it to exit.
func (c *child) kill(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	c.wait(t)
}

// wait waits for the child to exit.
func (c *child) wait(t *testing.T) {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(wait):
		t.Fatal("the child tool worker did not exit")
	}
}

func (c *child) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a bytes.Buffer safe for a child's stderr and the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// eventually polls cond until it holds, failing the test after wait.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// claim reads the claim of a call to the tool "lookup" from the claims
// bucket, as JSON fields.
func (e *env) claim(t *testing.T, session, turn, callID string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	kv, err := e.js.KeyValue(ctx, bus.ClaimsBucket)
	if err != nil {
		t.Fatalf("KeyValue(%s) = %v", bus.ClaimsBucket, err)
	}
	entry, err := kv.Get(ctx, bus.ClaimKey(tool, session, turn, callID))
	if err != nil {
		t.Fatalf("claim of %s: %v", callID, err)
	}
	var rec map[string]any
	if err := json.Unmarshal(entry.Value(), &rec); err != nil {
		t.Fatalf("claim of %s: %v", callID, err)
	}
	return rec
}

// TestKilledToolWorker kills (SIGKILL) a tool worker process in the middle
// of a call. The call is redelivered to a second tool worker process: an
// idempotent tool's call runs again there, once; any other is never run
// again and is answered "tool outcome unknown", flagged synthesized. Either
// way the session holds one result for the call, and the call is acked.
func TestKilledToolWorker(t *testing.T) {
	for _, idempotent := range []bool{true, false} {
		t.Run(fmt.Sprintf("idempotent=%v", idempotent), func(t *testing.T) {
			e := newEnv(t, &bus.Topology{ToolAckWait: childAckWait})
			ledger := filepath.Join(t.TempDir(), "ledger")
			results := e.follow(t, "s1")

			first := startChild(t, e, ledger, modeBlock, idempotent)
			e.publishCall(t, wire.JSON, newCall("s1", tool, "c1"))
			eventually(t, "the first tool worker to run the call", func() bool { return len(readLedger(t, ledger)) == 1 })
			first.kill(t)

			second := startChild(t, e, ledger, modeFinish, idempotent)
			_, got := results.next(t)
			want := wire.ToolResult{SessionID: "s1", TurnID: "t1", CallID: "c1", Token: tokenOf("s1", tool, "c1"), Content: "ran in " + second.pid()}
			wantRuns := []string{first.pid() + "/c1", second.pid() + "/c1"}
			if !idempotent {
				want.Content, want.IsError, want.Synthesized = toolworker.OutcomeUnknownContent, true, true
				wantRuns = wantRuns[:1]
			}
			if got != want {
				t.Errorf("result = %+v; want %+v", got, want)
			}
			e.toolConsumer(t)
			if runs := readLedger(t, ledger); !slices.Equal(runs, wantRuns) {
				t.Errorf("runs (pid/call) = %v; want %v", runs, wantRuns)
			}
			if n := e.storedResults(t, "s1"); n != 1 {
				t.Errorf("stored results = %d; want 1", n)
			}
			if rec := e.claim(t, "s1", "t1", "c1"); rec["state"] != "done" {
				t.Errorf("claim = %v; want state done", rec)
			}
		})
	}
}

// TestKilledAfterClaimDone kills a tool worker process after it recorded
// the call's result in the claim and before it published it. The
// redelivered call is answered from the claim by the second tool worker:
// the tool ran once, its result is published once, and the call is acked.
func TestKilledAfterClaimDone(t *testing.T) {
	e := newEnv(t, &bus.Topology{ToolAckWait: childAckWait})
	ledger := filepath.Join(t.TempDir(), "ledger")
	results := e.follow(t, "s1")

	first := startChild(t, e, ledger, modeKillAfterDone, false)
	e.publishCall(t, wire.JSON, newCall("s1", tool, "c1"))
	first.wait(t) // it kills itself once the result is recorded
	if n := e.storedResults(t, "s1"); n != 0 {
		t.Fatalf("stored results = %d before the redelivery; want 0 (the first tool worker died before publishing)", n)
	}

	second := startChild(t, e, ledger, modeFinish, false)
	_, got := results.next(t)
	want := wire.ToolResult{SessionID: "s1", TurnID: "t1", CallID: "c1", Token: tokenOf("s1", tool, "c1"), Content: "ran in " + first.pid()}
	if got != want {
		t.Errorf("result = %+v; want %+v (the first run's, from the claim)", got, want)
	}
	e.toolConsumer(t)
	if runs, want := readLedger(t, ledger), []string{first.pid() + "/c1"}; !slices.Equal(runs, want) {
		t.Errorf("runs (pid/call) = %v; want %v", runs, want)
	}
	if n := e.storedResults(t, "s1"); n != 1 {
		t.Errorf("stored results = %d; want 1", n)
	}
	if !strings.Contains(second.stderr.String(), `"from_claim":true`) {
		t.Error("the second tool worker did not answer from the claim")
	}
}

// TestPausedToolWorker stops a tool worker process (SIGSTOP) in the middle
// of a call of a tool that is not idempotent, past its AckWait. A second
// tool worker gets the redelivery, finds the claim stale, and answers "tool
// outcome unknown" without running the tool. When the first one wakes
// (SIGCONT) and its handler returns, it finds the claim taken over and
// publishes nothing: the effect happened once and one result is stored.
func TestPausedToolWorker(t *testing.T) {
	e := newEnv(t, &bus.Topology{ToolAckWait: childAckWait})
	ledger := filepath.Join(t.TempDir(), "ledger")
	results := e.follow(t, "s1")

	paused := startChild(t, e, ledger, modeLinger, false)
	e.publishCall(t, wire.JSON, newCall("s1", tool, "c1"))
	eventually(t, "the first tool worker to run the call", func() bool { return len(readLedger(t, ledger)) == 1 })
	paused.signal(t, syscall.SIGSTOP)

	startChild(t, e, ledger, modeFinish, false)
	_, got := results.next(t)
	want := wire.ToolResult{SessionID: "s1", TurnID: "t1", CallID: "c1", Token: tokenOf("s1", tool, "c1"), Content: toolworker.OutcomeUnknownContent, IsError: true, Synthesized: true}
	if got != want {
		t.Errorf("result = %+v; want %+v", got, want)
	}
	e.toolConsumer(t)

	// Wake the first tool worker with its handler about to return.
	if err := os.WriteFile(ledger+".release", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	paused.signal(t, syscall.SIGCONT)
	eventually(t, "the woken tool worker to drop its result", func() bool {
		return strings.Contains(paused.stderr.String(), "the claim was taken over")
	})
	if strings.Contains(paused.stderr.String(), `"message":"call answered"`) {
		t.Error("the woken tool worker answered the call")
	}
	if runs, want := readLedger(t, ledger), []string{paused.pid() + "/c1"}; !slices.Equal(runs, want) {
		t.Errorf("runs (pid/call) = %v; want %v", runs, want)
	}
	if n := e.storedResults(t, "s1"); n != 1 {
		t.Errorf("stored results = %d; want 1", n)
	}
	rec := e.claim(t, "s1", "t1", "c1")
	if res, _ := rec["result"].(map[string]any); rec["state"] != "done" || res["synthesized"] != true {
		t.Errorf("claim = %v; want done with the synthesized result", rec)
	}
}

package worker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/internal/worker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// A child worker process is this test binary run with these variables.
const (
	childWorkerEnv = "TURNSTREAM_TEST_CHILD_NATS"
	childMockEnv   = "TURNSTREAM_TEST_CHILD_MOCK"
	childCountEnv  = "TURNSTREAM_TEST_CHILD_COUNT" // a file: one line per poison decode
	// poisonMarker in a request body makes the child kill itself with
	// SIGKILL inside decode: a crash no recover can catch, like a stack
	// overflow or the OOM killer.
	poisonMarker = "KILL-THE-WORKER-IN-DECODE"
	// innocentMarker in a request body makes a child started with
	// childHoldEnv hold it inside decode until the process dies.
	innocentMarker = "DECODING-WHEN-THE-WORKER-DIES"
	childHoldEnv   = "TURNSTREAM_TEST_CHILD_HOLD"
	// pauseMarker makes a child started with childHoldEnv linger in
	// decode, so that the test can SIGSTOP it there.
	pauseMarker = "PAUSE-THE-WORKER-IN-DECODE"
)

// runChildWorker runs a worker until SIGTERM, or until it kills itself.
func runChildWorker() int {
	innocentFile := os.Getenv(childCountEnv) + ".innocent"
	pauseFile := os.Getenv(childCountEnv) + ".paused"
	worker.SetDecodeHook(func(data []byte) {
		if bytes.Contains(data, []byte(pauseMarker)) && os.Getenv(childHoldEnv) != "" {
			// Tell the test this delivery is inside decode, and give it
			// time to stop the process here.
			os.WriteFile(pauseFile, nil, 0o600) //nolint:errcheck // the test waits for it
			time.Sleep(500 * time.Millisecond)
			return
		}
		if bytes.Contains(data, []byte(innocentMarker)) && os.Getenv(childHoldEnv) != "" {
			// Hold the innocent request inside decode until the process dies.
			os.WriteFile(innocentFile, nil, 0o600) //nolint:errcheck // the poison waits for it
			select {}
		}
		if !bytes.Contains(data, []byte(poisonMarker)) {
			return
		}
		if os.Getenv(childHoldEnv) != "" {
			for range 1000 { // until the innocent request is decoding beside this one
				if _, err := os.Stat(innocentFile); err == nil {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		if f, err := os.OpenFile(os.Getenv(childCountEnv), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
			fmt.Fprintln(f, "decode")
			f.Sync() //nolint:errcheck // best effort before dying
			f.Close()
		}
		syscall.Kill(os.Getpid(), syscall.SIGKILL) //nolint:errcheck // dies here
		select {}
	})
	nc, err := nats.Connect(os.Getenv(childWorkerEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child worker:", err)
		return 1
	}
	defer nc.Close()
	cfg := config.Mock(os.Getenv(childMockEnv))
	cfg.Worker.AckWait = config.Duration(2 * time.Second)
	cfg.Worker.DrainTimeout = config.Duration(2 * time.Second)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	log := zerolog.New(os.Stderr).Level(zerolog.WarnLevel)
	w, err := worker.New(ctx, worker.Options{Conn: nc, Config: cfg, Log: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child worker:", err)
		return 1
	}
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "child worker:", err)
		return 1
	}
	return 0
}

// child is a worker process started by startChild.
type child struct {
	cmd    *exec.Cmd
	done   chan struct{} // closed when the process has exited
	err    error         // cmd.Wait's result, once done is closed
	stderr *syncBuffer
}

func startChild(t *testing.T, e *env, countFile string, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), childWorkerEnv+"="+e.srv.URL(), childMockEnv+"="+e.http.URL+"/v1", childCountEnv+"="+countFile), env...)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, done: make(chan struct{}), stderr: stderr}
	go func() { c.err = cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		cmd.Process.Kill() //nolint:errcheck // may have exited
		<-c.done
		if t.Failed() && stderr.String() != "" {
			t.Logf("child worker stderr:\n%s", stderr.String())
		}
	})
	return c
}

// TestPoisonRequestKillingWorkers: a request that kills the worker process
// inside decode (SIGKILL, as a stack overflow or the OOM killer would) is
// decoded once more, alone in its process (one death may be the kill of an
// innocent worker); when that decode kills too, the next delivery finds
// the guard of an isolated decode and dead-letters the request with reason
// "poison" without decoding it again: decoded twice, never more.
// The session's next turn then runs, and the third worker survives.
func TestPoisonRequestKillingWorkers(t *testing.T) {
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{}))
	count := filepath.Join(t.TempDir(), "decodes")
	ctx := ctxFor(t)

	first := startChild(t, e, count)
	eventually(t, "the first worker creates its consumer", func() bool {
		_, err := e.js.Consumer(ctx, wire.StreamSubmit, "turn-workers")
		return err == nil
	})
	poison := `{"session_id":"p1","turn_id":"bad","input":[{"role":"user","content":"` + poisonMarker + `"}]}`
	if _, err := e.js.Publish(ctx, "turn.submit.p1", []byte(poison)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-first.done:
		err := first.err
		var ee *exec.ExitError
		if !errors.As(err, &ee) || !strings.Contains(ee.String(), "killed") {
			t.Fatalf("first worker exited with %v; want killed by SIGKILL in decode", err)
		}
	case <-time.After(wait):
		t.Fatal("the first worker did not die decoding the poison request")
	}

	// The session's next turn, queued behind the poison one.
	if _, err := e.js.Publish(ctx, "turn.submit.p1", []byte(`{"session_id":"p1","turn_id":"good","input":[{"role":"user","content":"hi"}]}`)); err != nil {
		t.Fatal(err)
	}
	isolated := startChild(t, e, count)
	select {
	case <-isolated.done:
	case <-time.After(wait):
		t.Fatal("the second worker did not die decoding the poison request alone")
	}
	second := startChild(t, e, count)
	ev := waitRejected(t, e.js, "p1")
	if ev.Payload["reason"] != "poison" || ev.TurnID != "" {
		t.Errorf("turn.rejected = %+v; want reason poison with no turn id (the request was not decoded)", ev.Payload)
	}
	eventually(t, "the poison request is dead-lettered", func() bool { return deadLetters(ctx, t, e.js)[poison] != "" })
	if got := deadLetters(ctx, t, e.js)[poison]; got != "poison" {
		t.Errorf("dead letter reason = %q; want poison", got)
	}
	if term := waitTerminal(t, e.js, "p1", "good"); term.Type != wire.EventTurnCompleted {
		t.Errorf("the session's next turn ended %s %v; want turn.completed", term.Type, term.Payload)
	}
	b, err := os.ReadFile(count)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "decode"); n != 2 {
		t.Errorf("the poison request was decoded %d times; want 2", n)
	}
	select {
	case <-second.done:
		t.Fatalf("the third worker died (%v); it must dead-letter the request without decoding it", second.err)
	default:
	}
	second.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // checked by Wait
	select {
	case <-second.done:
		if second.err != nil {
			t.Errorf("third worker exited with %v; want a clean drain", second.err)
		}
	case <-time.After(wait):
		t.Error("third worker did not drain")
	}
	// Nothing of the session is left in the work queue.
	s, err := e.js.Stream(ctx, wire.StreamSubmit)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter("turn.submit.p1"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(info.State.Subjects); n != 0 {
		t.Errorf("%d requests of p1 left in the work queue; want 0", n)
	}
}

// TestPoisonBesideAnInnocentRequest: when the process that a poison request
// kills was also decoding an innocent one, the death is not blamed on
// either: each is decoded again alone in its process. The innocent turn
// completes, and the poison request, whose isolated decode kills again, is
// dead-lettered at its next delivery: decoded twice, never more.
func TestPoisonBesideAnInnocentRequest(t *testing.T) {
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{}))
	count := filepath.Join(t.TempDir(), "decodes")
	ctx := ctxFor(t)

	first := startChild(t, e, count, childHoldEnv+"=1")
	eventually(t, "the first worker creates its consumer", func() bool {
		_, err := e.js.Consumer(ctx, wire.StreamSubmit, "turn-workers")
		return err == nil
	})
	innocent := `{"session_id":"i1","turn_id":"t1","input":[{"role":"user","content":"` + innocentMarker + `"}]}`
	if _, err := e.js.Publish(ctx, "turn.submit.i1", []byte(innocent)); err != nil {
		t.Fatal(err)
	}
	poison := `{"session_id":"p2","turn_id":"bad","input":[{"role":"user","content":"` + poisonMarker + `"}]}`
	if _, err := e.js.Publish(ctx, "turn.submit.p2", []byte(poison)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-first.done:
	case <-time.After(wait):
		t.Fatal("the first worker did not die")
	}
	// Workers are started until both requests ended; each poison decode
	// kills one.
	children := 1
	for done := false; !done; {
		if children > 3 {
			t.Fatal("more than three workers died: the poison request was decoded again and again")
		}
		c := startChild(t, e, count)
		children++
		select {
		case <-c.done:
			continue // killed by the poison's isolated decode
		case <-time.After(100 * time.Millisecond):
		}
		deadline := time.Now().Add(wait)
		for !done && time.Now().Before(deadline) {
			select {
			case <-c.done:
				deadline = time.Time{}
				continue
			default:
			}
			done = deadLetters(ctx, t, e.js)[poison] != "" && terminalOf(t, e, "i1", "t1") != ""
			time.Sleep(20 * time.Millisecond)
		}
	}
	if got := terminalOf(t, e, "i1", "t1"); got != wire.EventTurnCompleted {
		t.Errorf("the innocent turn ended %q; want turn.completed", got)
	}
	if got := deadLetters(ctx, t, e.js)[poison]; got != "poison" {
		t.Errorf("poison dead letter reason = %q; want poison", got)
	}
	b, err := os.ReadFile(count)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "decode"); n != 2 {
		t.Errorf("the poison request was decoded %d times; want 2 (once beside the innocent one, once alone)", n)
	}
}

// terminalOf is the type of a turn's terminal event, "" while it has none.
func terminalOf(t *testing.T, e *env, session, turn string) string {
	t.Helper()
	evs, _ := records[wire.SessionEvent](t, e.js, wire.StreamEvents, wire.Subjects{}.Event(session))
	for _, ev := range evs {
		if ev.TurnID == turn && ev.Terminal() {
			return ev.Type
		}
	}
	return ""
}

// TestPausedWorkerWakingLate: a worker stopped (SIGSTOP) inside decode
// loses the request to the next delivery, which finds its guard, decodes
// the request alone (one death is not blamed on it) and runs the turn.
// When the paused worker wakes and finishes decoding, its guard has moved:
// it leaves the request alone, so the turn has one outcome and runs once.
func TestPausedWorkerWakingLate(t *testing.T) {
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{}))
	count := filepath.Join(t.TempDir(), "decodes")
	ctx := ctxFor(t)

	paused := startChild(t, e, count, childHoldEnv+"=1")
	eventually(t, "the first worker creates its consumer", func() bool {
		_, err := e.js.Consumer(ctx, wire.StreamSubmit, "turn-workers")
		return err == nil
	})
	body := `{"session_id":"z1","turn_id":"t1","input":[{"role":"user","content":"` + pauseMarker + `"}]}`
	if _, err := e.js.Publish(ctx, "turn.submit.z1", []byte(body)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the first worker is decoding", func() bool {
		_, err := os.Stat(count + ".paused")
		return err == nil
	})
	if err := paused.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	startChild(t, e, count) // gets the redelivery after the ack wait
	if got := waitTerminal(t, e.js, "z1", "t1"); got.Type != wire.EventTurnCompleted {
		t.Errorf("the turn ended %s %v; want turn.completed", got.Type, got.Payload)
	}
	if err := paused.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the woken worker leaves the request", func() bool {
		return strings.Contains(paused.stderr.String(), "another delivery judged this request")
	})
	evs, _ := records[wire.SessionEvent](t, e.js, wire.StreamEvents, wire.Subjects{}.Event("z1"))
	if n := countTypes(evs); n[wire.EventTurnCompleted]+n[wire.EventTurnFailed] != 1 || n[wire.EventTurnRejected] != 0 || n[wire.EventTurnAccepted] != 1 {
		t.Errorf("events %v; want the turn accepted once and ended once, not rejected", n)
	}
	if msgs, _ := records[wire.Message](t, e.js, wire.StreamMessages, wire.Subjects{}.Message("z1")); len(msgs) != 2 {
		t.Errorf("%d session-log records; want the input and the answer", len(msgs))
	}
}

// TestNATSRestartDuringDecode: the server restarts while a request is
// being decoded, so the intake guard's release first fails. The worker
// retries it until the server is back, the turn runs once and completes,
// and a later delivery never takes the guard for a crash.
func TestNATSRestartDuringDecode(t *testing.T) {
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{}))
	var once sync.Once
	restarted := make(chan struct{})
	worker.SetDecodeHook(func(data []byte) {
		if bytes.Contains(data, []byte("RESTART-NATS-IN-DECODE")) {
			once.Do(func() { e.srv.Restart(); close(restarted) })
		}
	})
	t.Cleanup(func() { worker.SetDecodeHook(nil) })
	e.startWorker()
	body := `{"session_id":"r1","turn_id":"t1","input":[{"role":"user","content":"RESTART-NATS-IN-DECODE"}]}`
	if _, err := e.js.Publish(ctxFor(t), "turn.submit.r1", []byte(body)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-restarted:
	case <-time.After(wait):
		t.Fatal("the request was never decoded")
	}
	natstest.WaitConnected(t, e.nc)
	eventually(t, "JetStream answers again", func() bool {
		_, err := e.js.Stream(ctxFor(t), wire.StreamEvents)
		return err == nil
	})
	if got := waitTerminal(t, e.js, "r1", "t1"); got.Type != wire.EventTurnCompleted {
		t.Errorf("the turn ended %s %v; want turn.completed", got.Type, got.Payload)
	}
	evs, _ := records[wire.SessionEvent](t, e.js, wire.StreamEvents, wire.Subjects{}.Event("r1"))
	if n := countTypes(evs)[wire.EventTurnRejected]; n != 0 {
		t.Errorf("%d turn.rejected events; want none", n)
	}
}

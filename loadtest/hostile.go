package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/embedded"
	"github.com/turnstream/turnstream/internal/hostile"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/worker"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// HostileOptions configure the bounded-memory run (--hostile): a worker
// process takes hostile requests, hostile provider streams and huge tool
// results, with valid turns interleaved, and its peak RSS is measured next
// to the same worker serving the valid turns alone. Zero fields take the
// defaults noted; a negative count means none.
type HostileOptions struct {
	// Senders is how many hostile ~1 MB requests are in flight at once.
	// Default 64, the worker's default concurrency.
	Senders int
	// Rounds is how many requests each sender sends, one after the other,
	// cycling through the request bombs. Default 4.
	Rounds int
	// Floods is how many turns answered with a provider flood run, cycling
	// through the flood kinds, 8 at a time. Default 14 (each kind twice).
	Floods int
	// FloodBytes is the size of each flood. Default 256 MiB.
	FloodBytes int64
	// Heavy is how many turns offer the costliest tool schema within the
	// limits, each unique so that no cache helps. Default 16.
	Heavy int
	// BigResults is how many turns call a tool that returns 2 MiB of "<".
	// Default 16.
	BigResults int
	// Valid is how many plain turns run, 8 at a time, in both phases.
	// Default 64.
	Valid int
	// RSSBound is the worker's allowed peak RSS in the hostile phase.
	// Default 512 MiB.
	RSSBound int64
	// TurnTimeout bounds each turn. Default 2m.
	TurnTimeout time.Duration
	// Log receives the embedded parts' logs. Default: none.
	Log zerolog.Logger
}

func (o *HostileOptions) applyDefaults() {
	def := func(v *int, d int) {
		switch {
		case *v == 0:
			*v = d
		case *v < 0:
			*v = 0
		}
	}
	def(&o.Senders, 64)
	def(&o.Rounds, 4)
	def(&o.Floods, 2*len(hostile.FloodKinds))
	def(&o.Heavy, 16)
	def(&o.BigResults, 16)
	def(&o.Valid, 64)
	if o.FloodBytes == 0 {
		o.FloodBytes = 256 << 20
	}
	if o.RSSBound == 0 {
		o.RSSBound = 512 << 20
	}
	if o.TurnTimeout == 0 {
		o.TurnTimeout = defaultTurnTimeout
	}
}

// Validate reports a setting out of range. Every loop is bounded by these.
func (o *HostileOptions) Validate() error {
	for _, v := range []int{o.Senders, o.Rounds, o.Floods, o.Heavy, o.BigResults, o.Valid} {
		if v > 10_000 {
			return errors.New("loadtest: hostile counts must be between 0 and 10000")
		}
	}
	if o.FloodBytes < 0 || o.FloodBytes > 4<<30 || o.RSSBound < 0 || o.TurnTimeout < 0 {
		return errors.New("loadtest: --flood-bytes must be at most 4 GiB; bounds and timeouts positive")
	}
	return nil
}

// HostileReport is what a hostile run measured.
type HostileReport struct {
	Options HostileOptions `json:"-"`
	// Baseline is the worker serving the valid turns alone; Hostile the
	// same number of valid turns among the hostile input.
	Baseline, Hostile PhaseStats
	// Cases maps each hostile case to the outcomes it got, counted.
	Cases []CaseResult
}

// PhaseStats is one worker process's phase.
type PhaseStats struct {
	Valid, ValidCompleted int
	PeakRSS               int64 // bytes: the process's VmHWM
	CPU                   time.Duration
	Elapsed               time.Duration
	Failures              map[string]int `json:",omitempty"` // valid turns that did not complete, by outcome
}

// CaseResult is one hostile case: how often it ran and what it got.
type CaseResult struct {
	Name     string
	Want     string
	Got      map[string]int
	Expected bool // every run got Want
}

// OK reports whether the run held: every valid turn completed, every
// hostile case got its outcome, and the peak RSS stayed under the bound.
func (r *HostileReport) OK() bool {
	if r.Baseline.ValidCompleted != r.Baseline.Valid || r.Hostile.ValidCompleted != r.Hostile.Valid {
		return false
	}
	for _, c := range r.Cases {
		if !c.Expected {
			return false
		}
	}
	return r.Hostile.PeakRSS <= r.Options.RSSBound
}

// Child worker processes are this program run with these variables.
const (
	childNATSEnv = "TURNSTREAM_LOADTEST_WORKER_NATS"
	childMockEnv = "TURNSTREAM_LOADTEST_WORKER_MOCK"
)

// childWorker runs a worker with the default configuration against the
// mock provider until SIGTERM.
func childWorker() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	nc, err := nats.Connect(os.Getenv(childNATSEnv), nats.Name("turnstream loadtest worker"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest worker:", err)
		return 1
	}
	defer nc.Close()
	w, err := worker.New(ctx, worker.Options{Conn: nc, Config: config.Mock(os.Getenv(childMockEnv)), Log: zerolog.New(os.Stderr).Level(zerolog.ErrorLevel)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest worker:", err)
		return 1
	}
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest worker:", err)
		return 1
	}
	return 0
}

// bigResultTool returns 2 MiB of "<", which JSON would escape sixfold.
const bigResultTool = "big_result"

// prompts the loadtest's mock script recognizes.
const (
	promptNoTools = "no-tools:" // answer with text even though tools are offered
)

// RunHostile runs the two phases and returns their report.
func RunHostile(ctx context.Context, o HostileOptions) (*HostileReport, error) {
	o.applyDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "turnstream-hostile-*")
	if err != nil {
		return nil, fmt.Errorf("loadtest: %w", err)
	}
	defer os.RemoveAll(dir)
	srv, err := embedded.Start(embedded.Options{StoreDir: dir})
	if err != nil {
		return nil, err
	}
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()

	mockCtx, stopMock := context.WithCancel(context.WithoutCancel(ctx))
	mock := mockllm.New(hostile.Script(o.FloodBytes, plainWhenAsked(mockllm.Default(mockllm.DefaultOptions{}))))
	ready := make(chan string, 1)
	mockDone := make(chan error, 1)
	go func() { mockDone <- mock.ListenAndServe(mockCtx, "127.0.0.1:0", func(u string) { ready <- u }) }()
	defer func() { stopMock(); <-mockDone }()
	var mockURL string
	select {
	case mockURL = <-ready:
	case err := <-mockDone:
		return nil, err
	}

	nc, err := nats.Connect(srv.ClientURL(), nats.Name("turnstream loadtest"))
	if err != nil {
		return nil, fmt.Errorf("loadtest: connect: %w", err)
	}
	defer nc.Close()
	rep := &HostileReport{Options: o}
	h := &hostileRun{o: o, nc: nc, natsURL: srv.ClientURL(), mockURL: mockURL, runID: nuid.Next()[:8], rep: rep}

	if rep.Baseline, err = h.phase(ctx, "baseline", false); err != nil {
		return rep, err
	}
	if rep.Hostile, err = h.phase(ctx, "hostile", true); err != nil {
		return rep, err
	}
	rep.Cases = h.cases()
	return rep, nil
}

// plainWhenAsked answers a prompt starting with promptNoTools with text,
// and anything else as next does.
func plainWhenAsked(next mockllm.Script) mockllm.Script {
	return mockllm.ScriptFunc(func(req *mockllm.Request) *mockllm.Response {
		if !req.IsResponses() && req.LastMessage().Role == "user" && strings.HasPrefix(req.LastMessage().Text(), promptNoTools) {
			return mockllm.NewStream("mock-1").Text("ok").Finish("stop").Usage(10, 1).Response()
		}
		return next.Respond(req)
	})
}

type hostileRun struct {
	o                HostileOptions
	nc               *nats.Conn
	natsURL, mockURL string
	runID            string
	rep              *HostileReport

	mu  sync.Mutex
	got map[string]map[string]int // case name -> outcome -> count
	wnt map[string]string
}

func (h *hostileRun) record(name, want, got string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.got == nil {
		h.got, h.wnt = map[string]map[string]int{}, map[string]string{}
	}
	if h.got[name] == nil {
		h.got[name] = map[string]int{}
	}
	h.got[name][got]++
	h.wnt[name] = want
}

func (h *hostileRun) cases() []CaseResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []CaseResult
	for name, got := range h.got {
		want := h.wnt[name]
		out = append(out, CaseResult{Name: name, Want: want, Got: got, Expected: len(got) == 1 && got[want] > 0})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// phase starts a fresh worker process, runs the valid turns (and, when
// withHostile, everything hostile at the same time), and measures it.
func (h *hostileRun) phase(ctx context.Context, name string, withHostile bool) (PhaseStats, error) {
	var st PhaseStats
	w, err := startWorkerProcess(h.natsURL, h.mockURL)
	if err != nil {
		return st, err
	}
	defer w.stop()
	js, err := jetstream.New(h.nc)
	if err != nil {
		return st, fmt.Errorf("loadtest: %w", err)
	}
	if err := waitForConsumer(ctx, js); err != nil {
		return st, err
	}
	cl, err := client.New(h.nc)
	if err != nil {
		return st, fmt.Errorf("loadtest: %w", err)
	}
	phaseCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	toolsDone := make(chan error, 1)
	go func() {
		toolsDone <- toolworker.Serve(phaseCtx, js, map[string]toolworker.Handler{
			bigResultTool: func(context.Context, wire.ToolCall) (toolworker.Result, error) {
				return toolworker.Result{Content: strings.Repeat("<", 2<<20)}, nil
			},
		}, toolworker.WithLogger(h.o.Log))
	}()
	defer func() { cancel(); <-toolsDone }()

	start := time.Now()
	var wg sync.WaitGroup
	var validDone atomic.Int64
	st.Failures = map[string]int{}
	var failMu sync.Mutex
	runPool(&wg, 8, h.o.Valid, func(i int) {
		req := wire.TurnRequest{SessionID: fmt.Sprintf("hv-%s-%s-%d", h.runID, name, i), TurnID: "t1",
			Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "a valid turn among hostile ones"}}}
		r := runTurn(ctx, cl, req, h.o.TurnTimeout)
		if r.outcome == outcomeCompleted {
			validDone.Add(1)
			return
		}
		failMu.Lock()
		st.Failures[r.outcome]++
		failMu.Unlock()
	})
	if withHostile {
		h.hostile(ctx, &wg, js, cl)
	}
	wg.Wait()
	st.Elapsed = time.Since(start)
	st.Valid, st.ValidCompleted = h.o.Valid, int(validDone.Load())
	if len(st.Failures) == 0 {
		st.Failures = nil
	}
	st.PeakRSS, st.CPU, err = w.usage()
	return st, err
}

// hostile starts every hostile sender on wg.
func (h *hostileRun) hostile(ctx context.Context, wg *sync.WaitGroup, js jetstream.JetStream, cl *client.Client) {
	rejected, err := watchRejections(ctx, js)
	if err != nil {
		h.record("watch rejections", "ok", err.Error())
		return
	}
	var senders sync.WaitGroup
	runPool(&senders, h.o.Senders, h.o.Senders*h.o.Rounds, func(i int) {
		sender, round := i%h.o.Senders, i/h.o.Senders
		session := func(k int) string { return fmt.Sprintf("hx-%s-%d-%d-%d", h.runID, sender, round, k) }
		bombs := hostile.Requests(session)
		k := i % len(bombs)
		b := bombs[k]
		m := &nats.Msg{Subject: "turn.submit." + session(k), Data: b.Body, Header: nats.Header{}}
		if b.ContentType != "" {
			m.Header.Set(wire.HeaderContentType, b.ContentType)
		}
		want := "rejected/" + b.Reason
		wait := rejected.await(session(k))
		defer rejected.forget(session(k))
		if _, err := js.PublishMsg(ctx, m); err != nil {
			h.record(b.Name, want, "error/publish")
			return
		}
		select {
		case reason := <-wait:
			h.record(b.Name, want, "rejected/"+reason)
		case <-time.After(h.o.TurnTimeout):
			h.record(b.Name, want, "error/timeout")
		case <-ctx.Done():
			h.record(b.Name, want, "error/canceled")
		}
	})
	runPool(&senders, 8, h.o.Floods, func(i int) {
		kind := hostile.FloodKinds[i%len(hostile.FloodKinds)]
		req := wire.TurnRequest{SessionID: fmt.Sprintf("hf-%s-%d", h.runID, i), TurnID: "t1",
			Input: []wire.InputMessage{{Role: wire.RoleUser, Content: hostile.FloodPrefix + string(kind)}}}
		r := runTurn(ctx, cl, req, h.o.TurnTimeout)
		h.record("provider flood: "+string(kind), "failed/provider_failed:RESPONSE_TOO_LARGE", r.outcome)
	})
	runPool(&senders, 8, h.o.Heavy, func(i int) {
		salt := fmt.Sprintf("h%s%d", h.runID, i)
		req := wire.TurnRequest{SessionID: "hs-" + salt, TurnID: "t1",
			Input: []wire.InputMessage{{Role: wire.RoleUser, Content: promptNoTools + " heavy schema"}},
			Tools: []wire.Tool{{Name: "heavy", Parameters: hostile.HeavySchema(salt)}}}
		r := runTurn(ctx, cl, req, h.o.TurnTimeout)
		h.record("costliest schema within the limits", outcomeCompleted, r.outcome)
	})
	runPool(&senders, 8, h.o.BigResults, func(i int) {
		req := wire.TurnRequest{SessionID: fmt.Sprintf("hr-%s-%d", h.runID, i), TurnID: "t1",
			Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "call the tool"}},
			Tools: []wire.Tool{{Name: bigResultTool, Parameters: map[string]any{"type": "object"}}}}
		r := runTurn(ctx, cl, req, h.o.TurnTimeout)
		h.record("tool result of 2 MiB of <", outcomeCompleted, r.outcome)
	})
	wg.Go(func() { senders.Wait(); rejected.stop() })
}

// runPool runs fn(0..n-1) on workers goroutines added to wg.
func runPool(wg *sync.WaitGroup, workers, n int, fn func(i int)) {
	var next atomic.Int64
	for range min(workers, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				fn(i)
			}
		})
	}
}

// rejections delivers the reason of each session's turn.rejected event to
// whoever awaits it.
type rejections struct {
	mu      sync.Mutex
	waiters map[string]chan string
	it      jetstream.MessagesContext
	done    chan struct{}
}

func watchRejections(ctx context.Context, js jetstream.JetStream) (*rejections, error) {
	s, err := js.Stream(ctx, wire.StreamEvents)
	if err != nil {
		return nil, fmt.Errorf("loadtest: stream %s: %w", wire.StreamEvents, err)
	}
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"turn.event.>"}, DeliverPolicy: jetstream.DeliverNewPolicy})
	if err != nil {
		return nil, fmt.Errorf("loadtest: %w", err)
	}
	it, err := cons.Messages()
	if err != nil {
		return nil, fmt.Errorf("loadtest: %w", err)
	}
	r := &rejections{waiters: map[string]chan string{}, it: it, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for {
			m, err := it.Next()
			if err != nil {
				return // stopped
			}
			var ev wire.SessionEvent
			if wire.Decode(m.Headers().Get(wire.HeaderContentType), m.Data(), &ev) != nil || ev.Type != wire.EventTurnRejected {
				continue
			}
			r.mu.Lock()
			ch := r.waiters[ev.SessionID]
			r.mu.Unlock()
			if ch != nil {
				select {
				case ch <- reason(&ev):
				default:
				}
			}
		}
	}()
	return r, nil
}

func (r *rejections) await(session string) <-chan string {
	ch := make(chan string, 1)
	r.mu.Lock()
	r.waiters[session] = ch
	r.mu.Unlock()
	return ch
}

func (r *rejections) forget(session string) {
	r.mu.Lock()
	delete(r.waiters, session)
	r.mu.Unlock()
}

func (r *rejections) stop() { r.it.Stop(); <-r.done }

func waitForConsumer(ctx context.Context, js jetstream.JetStream) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		if _, err := js.Consumer(ctx, wire.StreamSubmit, "turn-workers"); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.New("loadtest: the worker process did not start")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// workerProcess is a child worker.
type workerProcess struct {
	cmd    *exec.Cmd
	done   chan struct{}
	err    error
	stderr *bytes.Buffer
}

func startWorkerProcess(natsURL, mockURL string) (*workerProcess, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("loadtest: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childNATSEnv+"="+natsURL, childMockEnv+"="+mockURL)
	w := &workerProcess{cmd: cmd, done: make(chan struct{}), stderr: &bytes.Buffer{}}
	cmd.Stderr = w.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("loadtest: start the worker process: %w", err)
	}
	go func() { w.err = cmd.Wait(); close(w.done) }()
	return w, nil
}

// usage reads the process's peak RSS (VmHWM) and CPU time from /proc.
func (w *workerProcess) usage() (peak int64, cpu time.Duration, err error) {
	select {
	case <-w.done:
		return 0, 0, fmt.Errorf("loadtest: the worker process died (%v): %s", w.err, lastLines(w.stderr.String(), 20))
	default:
	}
	s, err := readProc(w.cmd.Process.Pid)
	if err != nil {
		return 0, 0, err
	}
	return s.HWM, s.CPU, nil
}

func (w *workerProcess) stop() {
	w.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may have exited
	select {
	case <-w.done:
	case <-time.After(30 * time.Second):
		w.cmd.Process.Kill() //nolint:errcheck // it may have exited
		<-w.done
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// WriteText writes the report for people.
func (r *HostileReport) WriteText(out io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "hostile run on %s (NATS %s): worker process, default config (concurrency 64)\n", runtime.Version(), server.VERSION)
	fmt.Fprintf(&b, "%-9s %14s %12s %10s %10s\n", "phase", "valid turns", "peak RSS", "CPU", "elapsed")
	for _, p := range []struct {
		name string
		s    PhaseStats
	}{{"baseline", r.Baseline}, {"hostile", r.Hostile}} {
		fmt.Fprintf(&b, "%-9s %8d/%-5d %8.1f MiB %9.2fs %9.2fs\n", p.name, p.s.ValidCompleted, p.s.Valid, float64(p.s.PeakRSS)/(1<<20), p.s.CPU.Seconds(), p.s.Elapsed.Seconds())
		for outcome, n := range p.s.Failures {
			fmt.Fprintf(&b, "          valid turn not completed: %s x%d\n", outcome, n)
		}
	}
	if r.Baseline.PeakRSS > 0 {
		fmt.Fprintf(&b, "peak RSS hostile/baseline: %.2fx; bound %.0f MiB: %s\n", float64(r.Hostile.PeakRSS)/float64(r.Baseline.PeakRSS),
			float64(r.Options.RSSBound)/(1<<20), map[bool]string{true: "held", false: "EXCEEDED"}[r.Hostile.PeakRSS <= r.Options.RSSBound])
	}
	fmt.Fprintf(&b, "\n%-42s %-44s %s\n", "hostile case", "outcome wanted", "got")
	for _, c := range r.Cases {
		var got []string
		for o, n := range c.Got {
			got = append(got, fmt.Sprintf("%s x%d", o, n))
		}
		sort.Strings(got)
		mark := "ok"
		if !c.Expected {
			mark = "UNEXPECTED"
		}
		fmt.Fprintf(&b, "%-42s %-44s %s  %s\n", c.Name, c.Want, strings.Join(got, ", "), mark)
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// WriteJSON writes the report as JSON.
func (r *HostileReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

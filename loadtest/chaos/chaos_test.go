package chaos

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/hostile"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/internal/turn"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/wire"
)

var full = flag.Bool("chaos.full", false, "run the full chaos scenarios (minutes; see doc.go)")

// size picks the CI figure or the full one.
func size(ci, fullRun int) int {
	if *full {
		return fullRun
	}
	return ci
}

// settle bounds how long a scenario waits for its turns to end after the
// chaos stops; it is a bound, not a measured speed.
const settle = 3 * time.Minute

// rig is the stack of one scenario: NATS, the mock provider, and worker and
// tool-worker processes.
type rig struct {
	t        *testing.T
	nc       *nats.Conn
	js       jetstream.JetStream
	urls     string
	mockURL  string
	ledger   string
	replicas string

	mu      sync.Mutex
	workers []*proc
	tools   []*proc
}

func newRig(t *testing.T, urls string, nc *nats.Conn, replicas int) *rig {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	mock := mockllm.New(mockllm.Default(mockllm.DefaultOptions{Latency: 10 * time.Millisecond}))
	hs := httptest.NewServer(mock)
	t.Cleanup(hs.Close)
	return &rig{t: t, nc: nc, js: js, urls: urls, mockURL: hs.URL + "/v1",
		ledger: filepath.Join(t.TempDir(), "ledger"), replicas: fmt.Sprint(replicas)}
}

func (r *rig) env() []string {
	return []string{envNATS + "=" + r.urls, envMock + "=" + r.mockURL, envLedger + "=" + r.ledger, envReplicas + "=" + r.replicas}
}

func (r *rig) worker(env ...string) *proc {
	p := start(r.t, "worker", append(r.env(), env...)...)
	r.mu.Lock()
	r.workers = append(r.workers, p)
	r.mu.Unlock()
	return p
}

func (r *rig) toolWorker(env ...string) *proc {
	p := start(r.t, "tools", append(r.env(), env...)...)
	r.mu.Lock()
	r.tools = append(r.tools, p)
	r.mu.Unlock()
	return p
}

// live returns the running processes of a role.
func (r *rig) live(role string) []*proc {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*proc
	for _, p := range append(append([]*proc(nil), r.workers...), r.tools...) {
		if p.role == role && p.alive() {
			out = append(out, p)
		}
	}
	return out
}

// ready waits until the workers created the topology.
func (r *rig) ready() {
	r.t.Helper()
	r.eventually("the workers create the topology", 60*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := r.js.Consumer(ctx, wire.StreamSubmit, bus.WorkerConsumer)
		return err == nil
	})
}

func (r *rig) eventually(what string, bound time.Duration, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			r.t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var chaosTools = []wire.Tool{
	{Name: toolEffect, Description: "a side effect that must not happen twice", Parameters: map[string]any{"type": "object"}},
	{Name: toolIdem, Description: "an idempotent lookup", Parameters: map[string]any{"type": "object"}},
}

// submit publishes one turn (with a tool round) and returns it.
func (r *rig) submit(session string, index int) submitted {
	r.t.Helper()
	s := submitted{session: session, turn: fmt.Sprintf("t%d", index), index: index}
	body, err := json.Marshal(wire.TurnRequest{SessionID: session, TurnID: s.turn, Tools: chaosTools,
		Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "turn " + s.turn + " of " + session}}})
	if err != nil {
		r.t.Fatal(err)
	}
	for try := 0; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = r.js.PublishMsg(ctx, &nats.Msg{Subject: wire.Subjects{}.Submit(session), Data: body},
			jetstream.WithMsgID(client.MsgID(session, s.turn)))
		cancel()
		if err == nil {
			return s
		}
		if try == 60 { // a node restarting: retried, deduplicated
			r.t.Fatalf("submit %s/%s: %v", session, s.turn, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// awaitEnds waits until every turn has a terminal event.
func (r *rig) awaitEnds(turns []submitted, bound time.Duration) {
	r.t.Helper()
	pending := map[string]bool{}
	for _, s := range turns {
		pending[s.session+"/"+s.turn] = true
	}
	deadline := time.Now().Add(bound)
	for len(pending) > 0 {
		sessions := map[string]bool{}
		for k := range pending {
			sessions[strings.SplitN(k, "/", 2)[0]] = true
		}
		for session := range sessions {
			for _, ev := range tryRead[wire.SessionEvent](r.js, wire.StreamEvents, wire.Subjects{}.Event(session)) {
				if ev.Terminal() {
					delete(pending, session+"/"+ev.TurnID)
				}
			}
		}
		if len(pending) == 0 {
			return
		}
		if time.Now().After(deadline) {
			some := []string{}
			for k := range pending {
				if len(some) < 5 {
					some = append(some, k)
				}
			}
			for _, k := range some {
				session, turn, _ := strings.Cut(k, "/")
				r.t.Logf("%s: what the processes logged of it:\n%s", k, r.logsOf(session, turn))
			}
			r.t.Fatalf("%d turns have no terminal event after %v (e.g. %v)", len(pending), bound, some)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// verify runs the oracle after a quiet period (a straggler writing late
// would show) and fails the test on any violation.
func (r *rig) verify(name string, turns []submitted, extra string) figures {
	r.t.Helper()
	time.Sleep(2 * workerAckWait)
	f := check(r.t, r.js, r.ledger, turns)
	r.t.Logf("chaos %s: %s%s", name, f, extra)
	if f.Failed > 0 {
		// The provider and the tools never fail: every turn must complete.
		r.t.Errorf("%d turns failed: %v", f.Failed, f.Reasons)
		r.explainFailures(turns)
	}
	for i, v := range f.Violations {
		if i == 20 {
			r.t.Errorf("... and %d more violations", len(f.Violations)-20)
			break
		}
		r.t.Error(v)
	}
	return f
}

// tryRead is read without failing the test: a node may be restarting.
func tryRead[T any](js jetstream.JetStream, stream, subject string) (out []T) {
	defer func() { _ = recover() }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return nil
	}
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		return nil
	}
	defer js.DeleteConsumer(context.Background(), stream, cons.CachedInfo().Name) //nolint:errcheck // it expires anyway
	batch, err := cons.FetchNoWait(10_000)
	if err != nil {
		return nil
	}
	for m := range batch.Messages() {
		var v T
		if wire.Decode(m.Headers().Get(wire.HeaderContentType), m.Data(), &v) == nil {
			out = append(out, v)
		}
	}
	return out
}

func singleNode(t *testing.T) (*natstest.Server, *rig) {
	srv := natstest.Start(t)
	return srv, newRig(t, srv.URL(), srv.Connect(), 1)
}

// pace submits sessions×perSession turns, one every gap, round-robin over
// the sessions so each has several turns queued behind each other.
func (r *rig) pace(prefix string, sessions, perSession int, gap time.Duration) []submitted {
	var out []submitted
	for i := range perSession {
		for s := range sessions {
			out = append(out, r.submit(fmt.Sprintf("%s%d", prefix, s), i+1))
			time.Sleep(gap)
		}
	}
	return out
}

// TestChaosRandomKills: turns with a tool round each, several per session,
// while workers and tool workers are SIGKILLed at random.
func TestChaosRandomKills(t *testing.T) {
	_, r := singleNode(t)
	for range 3 {
		r.worker()
	}
	for range 2 {
		r.toolWorker()
	}
	r.ready()
	sessions, perSession := size(12, 60), size(3, 5)
	wantKills, wantToolKills := size(6, 30), size(2, 5)
	gap := time.Duration(size(80, 100)) * time.Millisecond

	stop := make(chan struct{})
	var kills, toolKills atomic.Int32
	var wg sync.WaitGroup
	wg.Go(func() {
		rng := rand.New(rand.NewPCG(1, 2))
		tick := time.NewTicker(time.Duration(size(500, 800)) * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if int(kills.Load()) < wantKills {
				if ws := r.live("worker"); len(ws) > 0 {
					ws[rng.IntN(len(ws))].kill()
					kills.Add(1)
					r.worker()
				}
			}
			if int(toolKills.Load()) < wantToolKills {
				if p := r.toolMidCall(); p != nil {
					p.kill()
					toolKills.Add(1)
					r.toolWorker()
				}
			}
		}
	})
	turns := r.pace("rk", sessions, perSession, gap)
	r.eventually("the kills are done", settle, func() bool {
		return int(kills.Load()) >= wantKills && int(toolKills.Load()) >= wantToolKills
	})
	close(stop)
	wg.Wait()
	r.awaitEnds(turns, settle)
	r.verify("random kills", turns, fmt.Sprintf("; %d worker SIGKILLs, %d tool-worker SIGKILLs mid-call", kills.Load(), toolKills.Load()))
}

// toolMidCall returns a live tool worker that is inside a call: the ledger
// has its start line and no effect line yet.
func (r *rig) toolMidCall() *proc {
	b, err := os.ReadFile(r.ledger)
	if err != nil {
		return nil
	}
	open := map[string]string{} // call → pid
	for _, line := range strings.Split(string(b), "\n") {
		fs := strings.Fields(line)
		if len(fs) != 6 {
			continue
		}
		key := strings.Join(fs[1:5], " ")
		if fs[0] == "start" {
			open[key] = fs[5]
		} else {
			delete(open, key)
		}
	}
	for _, p := range r.live("tools") {
		for _, pid := range open {
			if pid == fmt.Sprint(p.pid()) {
				return p
			}
		}
	}
	return nil
}

// TestChaosCrashPoints: a worker is SIGKILLed at each named point of a
// turn; the next worker resumes the turn.
func TestChaosCrashPoints(t *testing.T) {
	_, r := singleNode(t)
	r.toolWorker()
	boot := r.worker()
	r.ready()
	boot.kill()
	runs := size(1, 5)
	var turns []submitted
	for _, point := range turn.ProbePoints {
		for run := range runs {
			session := fmt.Sprintf("cp-%s-%d", strings.ReplaceAll(point, "_", "-"), run)
			crashy := r.worker(envCrash + "=" + point)
			turns = append(turns, r.submit(session, 1))
			select {
			case <-crashy.done:
			case <-time.After(60 * time.Second):
				t.Fatalf("the worker never reached %s", point)
			}
			if !strings.Contains(crashy.stderr.String(), "crashing at "+point) {
				t.Fatalf("the crashy worker exited without crashing at %s:\n%s", point, lastLines(crashy.stderr.String(), 10))
			}
			next := r.worker()
			r.awaitEnds(turns[len(turns)-1:], settle)
			next.kill()
		}
	}
	r.worker()
	r.verify("crash points", turns, fmt.Sprintf("; %d points × %d runs", len(turn.ProbePoints), runs))
}

// TestChaosZombie: the lease holder is paused (SIGSTOP) mid-stream past
// its lease; another worker finishes the turn and the session's next turn;
// then the zombie wakes. Nothing it does is visible in the log, the
// streams followers read, or the state the next turn uses.
func TestChaosZombie(t *testing.T) {
	_, r := singleNode(t)
	r.toolWorker()
	pauseFile := filepath.Join(t.TempDir(), "paused")
	zombie := r.worker(envPause + "=" + turn.ProbeStreaming + "=" + pauseFile)
	r.ready()
	turns := []submitted{r.submit("zombie", 1)}
	r.eventually("the holder is mid-stream", 60*time.Second, func() bool {
		_, err := os.Stat(pauseFile)
		return err == nil
	})
	zombie.signal(t, syscall.SIGSTOP)
	r.worker()
	turns = append(turns, r.submit("zombie", 2))
	r.awaitEnds(turns, settle)

	before := r.snapshot("zombie", turns)
	zombie.signal(t, syscall.SIGCONT)
	r.eventually("the zombie gives up", 60*time.Second, func() bool {
		return strings.Contains(zombie.stderr.String(), "fenced") || !zombie.alive()
	})
	time.Sleep(2 * workerAckWait)
	if after := r.snapshot("zombie", turns); after != before {
		t.Errorf("the zombie's writes are visible:\nbefore %s\nafter  %s", before, after)
	}
	r.verify("zombie", turns, "")
}

// snapshot summarizes what readers of a session see: its log, its events,
// its turns' chunks and its continuation state.
func (r *rig) snapshot(session string, turns []submitted) string {
	r.t.Helper()
	s := wire.Subjects{}
	msgs := read[wire.Message](r.t, r.js, wire.StreamMessages, s.Message(session))
	evs := read[wire.SessionEvent](r.t, r.js, wire.StreamEvents, s.Event(session))
	chunks := 0
	for _, tr := range turns {
		chunks += len(read[wire.Chunk](r.t, r.js, wire.StreamChunks, s.Chunk(session, tr.turn)))
	}
	kv, err := r.js.KeyValue(context.Background(), bus.StateBucket)
	if err != nil {
		r.t.Fatal(err)
	}
	rev := uint64(0)
	if e, err := kv.Get(context.Background(), session+".=continuation"); err == nil {
		rev = e.Revision()
	}
	return fmt.Sprintf("%d messages, %d events, %d chunks, continuation revision %d", len(msgs), len(evs), chunks, rev)
}

// TestChaosToolWorkerKilledMidCall: the tool worker running a turn's two
// calls is SIGKILLed inside them. The idempotent call runs again once; the
// non-idempotent one is answered "tool outcome unknown" and never re-run.
func TestChaosToolWorkerKilledMidCall(t *testing.T) {
	_, r := singleNode(t)
	r.worker()
	holder := r.toolWorker(envHold + "=1")
	r.ready()
	turns := []submitted{r.submit("toolkill", 1)}
	r.eventually("both calls are running", 60*time.Second, func() bool {
		l := readLedger(t, r.ledger)
		return len(l) == 2
	})
	holder.kill()
	r.toolWorker()
	r.awaitEnds(turns, settle)
	f := r.verify("tool worker killed mid-call", turns, "")
	msgs := read[wire.Message](t, r.js, wire.StreamMessages, wire.Subjects{}.Message("toolkill"))
	ledger := readLedger(t, r.ledger)
	for _, m := range msgs {
		if m.Role != wire.RoleTool {
			continue
		}
		var call wire.Call
		for _, a := range msgs {
			for _, c := range a.ToolCalls {
				if c.ID == m.ToolCallID {
					call = c
				}
			}
		}
		e := ledger[call.Name+" toolkill t1 "+call.ID]
		switch call.Name {
		case toolIdem:
			if m.IsError || e == nil || e.starts != 2 || e.effects != 1 {
				t.Errorf("idempotent call: result %q (error %v), ledger %+v; want it re-run once and answered", m.Content, m.IsError, e)
			}
		case toolEffect:
			if !m.IsError || !m.Synthesized || !strings.Contains(m.Content, "outcome unknown") || e == nil || e.starts != 1 || e.effects != 0 {
				t.Errorf("non-idempotent call: result %q (error %v, synthesized %v), ledger %+v; want 'tool outcome unknown', run once", m.Content, m.IsError, m.Synthesized, e)
			}
		}
	}
	if f.UnknownResult != 1 {
		t.Errorf("%d outcome-unknown results; want 1", f.UnknownResult)
	}
}

// TestChaosNATSRestarts: a single-node server restarted twice while turns
// run.
func TestChaosNATSRestarts(t *testing.T) {
	srv, r := singleNode(t)
	r.worker()
	r.worker()
	r.toolWorker()
	r.ready()
	n := size(24, 100)
	var turns []submitted
	for i := range n {
		turns = append(turns, r.submit(fmt.Sprintf("nr%d", i%(n/4)), i/(n/4)+1))
		if i == n/3 || i == 2*n/3 {
			srv.Restart()
			natstest.WaitConnected(t, r.nc)
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.awaitEnds(turns, settle)
	r.verify("NATS restarts", turns, "; 2 restarts")
}

// TestChaosClusterLeaderKill: a 3-node cluster (R3 streams) whose session
// log leader is killed twice while turns run.
func TestChaosClusterLeaderKill(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	r := newRig(t, c.URLs(), c.Connect(), 3)
	r.worker()
	r.worker()
	r.toolWorker()
	r.ready()
	n := size(12, 100)
	var turns []submitted
	kills := 0
	for i := range n {
		turns = append(turns, r.submit(fmt.Sprintf("cl%d", i%(n/4)), i/(n/4)+1))
		if i == n/3 || i == 2*n/3 {
			killed := c.KillStreamLeader(wire.StreamMessages)
			kills++
			c.WaitStreamLeader(wire.StreamMessages)
			c.Restart(killed)
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.awaitEnds(turns, settle)
	r.verify("cluster leader kills", turns, fmt.Sprintf("; %d session-log leader kills", kills))
}

// TestChaosPoison: hostile requests among valid turns: the valid turns
// complete, every hostile one is rejected and dead-lettered, and no worker
// dies.
func TestChaosPoison(t *testing.T) {
	_, r := singleNode(t)
	w1, w2 := r.worker(), r.worker()
	r.toolWorker()
	r.ready()
	bombs := hostile.Requests(func(i int) string { return fmt.Sprintf("poison%d", i) })
	var turns []submitted
	for i, b := range bombs {
		turns = append(turns, r.submit(fmt.Sprintf("valid%d", i), 1))
		m := &nats.Msg{Subject: wire.Subjects{}.Submit(fmt.Sprintf("poison%d", i)), Data: b.Body, Header: nats.Header{}}
		if b.ContentType != "" {
			m.Header.Set(wire.HeaderContentType, b.ContentType)
		}
		if _, err := r.js.PublishMsg(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	r.awaitEnds(turns, settle)
	for i := range bombs {
		session := fmt.Sprintf("poison%d", i)
		r.eventually("the poison is rejected", settle, func() bool {
			for _, ev := range tryRead[wire.SessionEvent](r.js, wire.StreamEvents, wire.Subjects{}.Event(session)) {
				if ev.Type == wire.EventTurnRejected {
					return true
				}
			}
			return false
		})
		if stored(t, r.js, wire.StreamDead, wire.Subjects{}.Dead(session)) == 0 {
			t.Errorf("%s: no dead letter", session)
		}
	}
	if !w1.alive() || !w2.alive() {
		t.Error("a worker died on hostile input")
	}
	r.verify("poison", turns, fmt.Sprintf("; %d hostile requests rejected", len(bombs)))
}

// stored counts the records on subject.
func stored(t *testing.T, js jetstream.JetStream, stream, subject string) uint64 {
	t.Helper()
	s, err := js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background(), jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects[subject]
}

// explainFailures logs the events of the turns that failed.
func (r *rig) explainFailures(turns []submitted) {
	for _, s := range turns {
		evs := read[wire.SessionEvent](r.t, r.js, wire.StreamEvents, wire.Subjects{}.Event(s.session))
		failed := false
		for _, ev := range evs {
			failed = failed || (ev.TurnID == s.turn && ev.Type == wire.EventTurnFailed)
		}
		if !failed {
			continue
		}
		var line []string
		for _, ev := range evs {
			if ev.TurnID == s.turn {
				line = append(line, fmt.Sprintf("%s@%s%v", ev.Type, ev.Time.Format("15:04:05.000"), ev.Payload))
			}
		}
		r.t.Logf("failed %s/%s:\n  %s", s.session, s.turn, strings.Join(line, "\n  "))
	}
}

// logsOf gathers the log lines of every process about a turn.
func (r *rig) logsOf(session, turn string) string {
	r.mu.Lock()
	procs := append(append([]*proc(nil), r.workers...), r.tools...)
	r.mu.Unlock()
	var out []string
	for _, p := range procs {
		for _, l := range strings.Split(p.stderr.String(), "\n") {
			if strings.Contains(l, `"session_id":"`+session+`"`) && strings.Contains(l, `"turn_id":"`+turn+`"`) {
				out = append(out, l)
			}
		}
	}
	return strings.Join(out, "\n")
}

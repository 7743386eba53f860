package worker_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestNATSRestartWhileATurnRuns: the server restarts while a turn waits on
// its tool call. The restarted server may deliver the running request
// again as if for the first time; whatever it does, the turn ends once,
// completed, with its call run once and answered once, and no message is
// written twice. (Before the turn's durable record and its session lease,
// such a delivery was taken for a resubmission and acked, and the turn
// never ended.)
func TestNATSRestartWhileATurnRuns(t *testing.T) {
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{}))
	e.cfg.Worker.AckWait = config.Duration(2 * time.Second)
	e.startWorker()
	var runs atomic.Int32
	var once sync.Once
	e.serveTools(map[string]toolworker.Handler{"lookup": func(ctx context.Context, call wire.ToolCall) (toolworker.Result, error) {
		runs.Add(1)
		once.Do(e.srv.Restart)
		return toolworker.Result{Content: "looked up"}, nil
	}})
	ctx := ctxFor(t)
	req := `{"session_id":"nr","turn_id":"t1","input":[{"role":"user","content":"look it up"}],` +
		`"tools":[{"name":"lookup","description":"d","parameters":{"type":"object"}}]}`
	if _, err := e.js.Publish(ctx, "turn.submit.nr", []byte(req)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the tool runs and the server restarts", func() bool { return runs.Load() > 0 })
	natstest.WaitConnected(t, e.nc)
	eventually(t, "JetStream answers again", func() bool {
		c, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err := e.js.Stream(c, wire.StreamEvents)
		return err == nil
	})
	if got := waitTerminal(t, e.js, "nr", "t1"); got.Type != wire.EventTurnCompleted {
		t.Fatalf("the turn ended %s %v; want turn.completed", got.Type, got.Payload)
	}
	evs, _ := records[wire.SessionEvent](t, e.js, wire.StreamEvents, wire.Subjects{}.Event("nr"))
	if n := countTypes(evs)[wire.EventTurnCompleted] + countTypes(evs)[wire.EventTurnFailed]; n != 1 {
		t.Errorf("%d terminal events; want 1", n)
	}
	msgs, _ := records[wire.Message](t, e.js, wire.StreamMessages, wire.Subjects{}.Message("nr"))
	var roles []wire.Role
	seen := map[uint64]bool{}
	for _, m := range msgs {
		roles = append(roles, m.Role)
		if seen[m.Seq] {
			t.Errorf("position %d written twice", m.Seq)
		}
		seen[m.Seq] = true
	}
	want := []wire.Role{wire.RoleUser, wire.RoleAssistant, wire.RoleTool, wire.RoleAssistant}
	if len(roles) != len(want) {
		t.Fatalf("session log roles %v; want %v", roles, want)
	}
	for i := range want {
		if roles[i] != want[i] {
			t.Fatalf("session log roles %v; want %v", roles, want)
		}
	}
	if msgs[2].IsError {
		t.Errorf("the tool message is an error (%q); want the tool's answer", msgs[2].Content)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the tool ran %d times; want 1", n)
	}
}

// TestSessionOrderWithoutHeldSlots: a session's turns submitted together
// run one after another in submission order, and the turns waiting for
// their session's earlier turn hold no slot: with two slots, one running
// turn and two waiting behind it, another session's turn still runs.
func TestSessionOrderWithoutHeldSlots(t *testing.T) {
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{}))
	e.cfg.Worker.Concurrency = 2
	e.startWorker()
	release := make(chan struct{})
	e.serveTools(map[string]toolworker.Handler{"block": func(ctx context.Context, call wire.ToolCall) (toolworker.Result, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return toolworker.Result{Content: "released"}, nil
	}})
	ctx := ctxFor(t)
	submit := func(session, turn, tools string) {
		t.Helper()
		req := `{"session_id":"` + session + `","turn_id":"` + turn + `","input":[{"role":"user","content":"go"}]` + tools + `}`
		if _, err := e.js.Publish(ctx, "turn.submit."+session, []byte(req)); err != nil {
			t.Fatal(err)
		}
	}
	blocking := `,"tools":[{"name":"block","description":"d","parameters":{"type":"object"}}]`
	submit("busy", "t1", blocking) // runs, and blocks in its tool
	submit("busy", "t2", "")       // waits for t1
	submit("busy", "t3", "")       // waits for t2
	eventually(t, "the first turn waits on its tool", func() bool {
		evs, _ := records[wire.SessionEvent](t, e.js, wire.StreamEvents, wire.Subjects{}.Event("busy"))
		return countTypes(evs)[wire.EventToolDispatched] > 0
	})
	submit("other", "t1", "")
	if got := waitTerminal(t, e.js, "other", "t1"); got.Type != wire.EventTurnCompleted {
		t.Fatalf("the other session's turn ended %s; want completed", got.Type)
	}
	close(release)
	for _, turn := range []string{"t1", "t2", "t3"} {
		if got := waitTerminal(t, e.js, "busy", turn); got.Type != wire.EventTurnCompleted {
			t.Fatalf("busy/%s ended %s; want completed", turn, got.Type)
		}
	}
	msgs, _ := records[wire.Message](t, e.js, wire.StreamMessages, wire.Subjects{}.Message("busy"))
	var order []string
	for _, m := range msgs {
		if len(order) == 0 || order[len(order)-1] != m.TurnID {
			order = append(order, m.TurnID)
		}
	}
	if len(order) != 3 || order[0] != "t1" || order[1] != "t2" || order[2] != "t3" {
		t.Errorf("the session log's turns ran as %v; want [t1 t2 t3], one after another", order)
	}
}

package mcptools_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/calltoken"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/toolworker/mcptools"
	"github.com/turnstream/turnstream/pkg/wire"
)

// wait bounds every blocking step of a test so a bug fails it instead of
// hanging it. It is never a performance assertion.
const wait = 20 * time.Second

// env is an embedded JetStream server with the topology the turnstream
// workers create, and a connection to it.
type env struct {
	js       jetstream.JetStream
	topo     bus.Topology
	subjects wire.Subjects
	logs     *syncBuffer // everything logged by the tool worker under test
}

func newEnv(t *testing.T) *env {
	t.Helper()
	srv := natstest.Start(t)
	_, js := srv.JetStream()
	e := &env{js: js, topo: bus.Topology{ToolAckWait: time.Second}, logs: &syncBuffer{}}
	e.subjects = e.topo.Subjects
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	if err := e.topo.Ensure(ctx, js); err != nil {
		t.Fatalf("Topology.Ensure() = %v", err)
	}
	return e
}

func (e *env) logger(t *testing.T) zerolog.Logger {
	return zerolog.New(io.MultiWriter(zerolog.NewTestWriter(t), e.logs)).Level(zerolog.DebugLevel)
}

// stdio is a source running the test MCP server as a child process that
// records its runs in ledger.
func stdio(ledger string) mcptools.Source {
	return mcptools.Source{Command: os.Args[0], Args: []string{"-test.run=^$"}, Env: map[string]string{serverLedgerEnv: ledger}}
}

// start starts the servers of sources, stopped when the test ends.
func (e *env) start(t *testing.T, sources []mcptools.Source, opts ...mcptools.Option) *mcptools.Servers {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	opts = append([]mcptools.Option{mcptools.WithLogger(e.logger(t)), mcptools.WithStderr(zerolog.NewTestWriter(t))}, opts...)
	s, err := mcptools.Start(ctx, sources, opts...)
	if err != nil {
		t.Fatalf("Start() = %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// serve serves the servers' tools through toolworker.Serve until the test
// ends; the servers close after Serve has returned.
func (e *env) serve(t *testing.T, s *mcptools.Servers) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	opts := []toolworker.Option{toolworker.WithLogger(e.logger(t))}
	if idem := s.Idempotent(); len(idem) > 0 {
		opts = append(opts, toolworker.WithIdempotent(idem...))
	}
	go func() { done <- toolworker.Serve(ctx, e.js, s.Handlers(), opts...) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve() = %v", err)
			}
		case <-time.After(wait):
			t.Error("Serve did not return")
		}
	})
}

// serveStdio serves the tools of the test MCP server, run as a child
// process, until the test ends; it returns the ledger of its runs and the
// results of session s1.
func serveStdio(t *testing.T) (*env, string, *results) {
	t.Helper()
	e := newEnv(t)
	ledger := ledgerPath(t)
	e.serve(t, e.start(t, []mcptools.Source{stdio(ledger)}))
	return e, ledger, e.follow(t)
}

// fleetKey stands in for the turnstream workers' key.
var fleetKey = func() calltoken.Key {
	k, err := calltoken.NewKey([]byte("mcptools tests' fleet key 32 byt"))
	if err != nil {
		panic(err)
	}
	return k
}()

func newCall(tool, callID, args string) wire.ToolCall {
	return wire.ToolCall{
		SessionID: "s1", TurnID: "t1", Step: 1, CallID: callID, Name: tool,
		Arguments: args, Deadline: time.Now().Add(time.Minute),
		Token: fleetKey.Sign("s1", "t1", callID, tool),
	}
}

// dispatch publishes call as a turn worker does: it creates the tool's
// consumer, then publishes the call.
func (e *env) dispatch(t *testing.T, call wire.ToolCall) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	if _, err := e.topo.EnsureToolConsumer(ctx, e.js, call.Name); err != nil {
		t.Fatalf("EnsureToolConsumer(%s) = %v", call.Name, err)
	}
	data, err := wire.JSON.Marshal(&call)
	if err != nil {
		t.Fatal(err)
	}
	m := &nats.Msg{Subject: e.subjects.Tool(call.Name), Data: data, Header: nats.Header{}}
	m.Header.Set(wire.HeaderContentType, wire.JSON.ContentType())
	if _, err := e.js.PublishMsg(ctx, m); err != nil {
		t.Fatalf("PublishMsg(%s) = %v", m.Subject, err)
	}
}

// results reads the stored results of session s1 in order.
type results struct{ it jetstream.MessagesContext }

func (e *env) follow(t *testing.T) *results {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	cons, err := e.js.OrderedConsumer(ctx, wire.StreamResults, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{e.subjects.Result("s1")},
	})
	if err != nil {
		t.Fatalf("OrderedConsumer(%s) = %v", wire.StreamResults, err)
	}
	it, err := cons.Messages()
	if err != nil {
		t.Fatalf("Messages() = %v", err)
	}
	t.Cleanup(it.Stop)
	return &results{it: it}
}

func (r *results) next(t *testing.T) wire.ToolResult {
	t.Helper()
	m, err := r.it.Next(jetstream.NextMaxWait(wait))
	if err != nil {
		t.Fatalf("no result: Next() = %v", err)
	}
	var res wire.ToolResult
	if err := wire.Decode(m.Headers().Get(wire.HeaderContentType), m.Data(), &res); err != nil {
		t.Fatalf("Decode(result) = %v", err)
	}
	return res
}

// call dispatches a call and returns its result.
func (e *env) call(t *testing.T, r *results, call wire.ToolCall) wire.ToolResult {
	t.Helper()
	e.dispatch(t, call)
	res := r.next(t)
	if res.CallID != call.CallID || res.Token != call.Token {
		t.Fatalf("result of call %s (token %s); want call %s's", res.CallID, res.Token, call.CallID)
	}
	return res
}

// settled waits until the tool's consumer holds no call pending or unacked.
func (e *env) settled(t *testing.T, tool string) {
	t.Helper()
	eventually(t, "the calls of "+tool+" to be acked", func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), wait)
		defer cancel()
		cons, err := e.js.Consumer(ctx, wire.StreamTools, bus.ToolConsumer(tool))
		if err != nil {
			t.Fatalf("Consumer(%s) = %v", bus.ToolConsumer(tool), err)
		}
		info := cons.CachedInfo()
		return info.NumAckPending == 0 && info.NumPending == 0
	})
}

// storedResults counts the results stored for session s1.
func (e *env) storedResults(t *testing.T) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	s, err := e.js.Stream(ctx, wire.StreamResults)
	if err != nil {
		t.Fatal(err)
	}
	subject := e.subjects.Result("s1")
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects[subject]
}

func ledgerPath(t *testing.T) string { return filepath.Join(t.TempDir(), "ledger") }

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

// syncBuffer is a bytes.Buffer safe for concurrent writers and readers.
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

func (b *syncBuffer) contains(s string) bool { return strings.Contains(b.String(), s) }

// line reports whether one line holds every one of parts.
func (b *syncBuffer) line(parts ...string) bool {
	for l := range strings.Lines(b.String()) {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return true
		}
	}
	return false
}

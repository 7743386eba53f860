package toolworker_test

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/calltoken"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// wait bounds every blocking step of a test so a bug fails it instead of
// hanging it. It is never a performance assertion.
const wait = 20 * time.Second

// env is an embedded JetStream server, a connection to it and the
// topology of the deployment under test.
type env struct {
	srv      *natstest.Server
	nc       *nats.Conn
	js       jetstream.JetStream
	topo     bus.Topology
	subjects wire.Subjects
}

// newEnv starts a server; with a topology, it also creates it, as a
// turnstream worker does at start.
func newEnv(t *testing.T, topo *bus.Topology) *env {
	t.Helper()
	srv := natstest.Start(t)
	nc, js := srv.JetStream()
	e := &env{srv: srv, nc: nc, js: js}
	if topo != nil {
		e.topo, e.subjects = *topo, topo.Subjects
		e.ensure(t, *topo)
	}
	return e
}

// ensureTool creates the tool's consumer with the topology's settings, as
// a turnstream worker does before it dispatches the tool's first call.
func (e *env) ensureTool(t *testing.T, tool string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	if _, err := e.topo.EnsureToolConsumer(ctx, e.js, tool); err != nil {
		t.Fatalf("EnsureToolConsumer(%s) = %v", tool, err)
	}
}

func (e *env) ensure(t *testing.T, topo bus.Topology) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	if err := topo.Ensure(ctx, e.js); err != nil {
		t.Fatalf("Topology.Ensure() = %v", err)
	}
}

func testLogger(t *testing.T, extra ...io.Writer) zerolog.Logger {
	w := io.MultiWriter(append([]io.Writer{zerolog.NewTestWriter(t)}, extra...)...)
	return zerolog.New(w).Level(zerolog.DebugLevel)
}

// served is one running Serve.
type served struct {
	t      *testing.T
	cancel context.CancelFunc
	done   chan struct{} // closed when Serve has returned err
	err    error
}

// serve runs Serve in a goroutine until the test ends or stop is called.
func (e *env) serve(t *testing.T, handlers map[string]toolworker.Handler, opts ...toolworker.Option) *served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{t: t, cancel: cancel, done: make(chan struct{})}
	opts = append([]toolworker.Option{toolworker.WithLogger(testLogger(t))}, opts...)
	go func() {
		defer close(s.done)
		s.err = toolworker.Serve(ctx, e.js, handlers, opts...)
	}()
	t.Cleanup(func() { s.stop() })
	return s
}

// stop cancels Serve's context and returns what Serve returned.
func (s *served) stop() error {
	s.t.Helper()
	s.cancel()
	return s.wait()
}

// wait returns what Serve returned, without cancelling it.
func (s *served) wait() error {
	s.t.Helper()
	select {
	case <-s.done:
		return s.err
	case <-time.After(wait):
		s.t.Fatal("Serve did not return")
		return nil
	}
}

// returned reports whether Serve has returned.
func (s *served) returned() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// fleetKey stands in for the turnstream workers' key: it signs the calls
// of the tests as a worker signs what it dispatches.
var fleetKey = func() calltoken.Key {
	k, err := calltoken.NewKey([]byte("toolworker tests' fleet key 32 b"))
	if err != nil {
		panic(err)
	}
	return k
}()

// tokenOf is the token a worker gives the call callID of session's turn
// t1 to tool.
func tokenOf(session, tool, callID string) string { return fleetKey.Sign(session, "t1", callID, tool) }

func newCall(session, tool, callID string) wire.ToolCall {
	return wire.ToolCall{
		SessionID: session, TurnID: "t1", Step: 1, CallID: callID, Name: tool,
		Arguments: `{"city":"Paris"}`, Deadline: time.Now().Add(time.Minute),
		Token: tokenOf(session, tool, callID),
	}
}

// publishCall dispatches call as a turn worker does: it creates the tool's
// consumer, then publishes the call.
func (e *env) publishCall(t *testing.T, codec wire.Codec, call wire.ToolCall) {
	t.Helper()
	data, err := codec.Marshal(&call)
	if err != nil {
		t.Fatalf("Marshal(call) = %v", err)
	}
	e.publishRaw(t, call.Name, codec.ContentType(), data)
}

// publishRaw publishes data as a call to tool, whose consumer it creates
// first.
func (e *env) publishRaw(t *testing.T, tool, contentType string, data []byte) {
	t.Helper()
	e.ensureTool(t, tool)
	subject := e.subjects.Tool(tool)
	m := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
	if contentType != "" {
		m.Header.Set(wire.HeaderContentType, contentType)
	}
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	if _, err := e.js.PublishMsg(ctx, m); err != nil {
		t.Fatalf("PublishMsg(%s) = %v", subject, err)
	}
}

// follower reads a session's stored results in order.
type follower struct {
	it jetstream.MessagesContext
}

func (e *env) follow(t *testing.T, session string) *follower {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	cons, err := e.js.OrderedConsumer(ctx, wire.StreamResults, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{e.subjects.Result(session)},
	})
	if err != nil {
		t.Fatalf("OrderedConsumer(%s) = %v", wire.StreamResults, err)
	}
	it, err := cons.Messages()
	if err != nil {
		t.Fatalf("Messages() = %v", err)
	}
	t.Cleanup(it.Stop)
	return &follower{it: it}
}

// next returns the next stored result, decoded by its Content-Type.
func (f *follower) next(t *testing.T) (jetstream.Msg, wire.ToolResult) {
	t.Helper()
	m, err := f.it.Next(jetstream.NextMaxWait(wait))
	if err != nil {
		t.Fatalf("no result: Next() = %v", err)
	}
	var r wire.ToolResult
	if err := wire.Decode(m.Headers().Get(wire.HeaderContentType), m.Data(), &r); err != nil {
		t.Fatalf("Decode(result) = %v", err)
	}
	return m, r
}

// storedResults counts the results stored for session.
func (e *env) storedResults(t *testing.T, session string) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	s, err := e.js.Stream(ctx, wire.StreamResults)
	if err != nil {
		t.Fatalf("Stream(%s) = %v", wire.StreamResults, err)
	}
	subject := e.subjects.Result(session)
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatalf("Info(%s) = %v", wire.StreamResults, err)
	}
	return info.State.Subjects[subject]
}

// signal is an io.Writer that closes C the first time a log line contains
// match.
type signal struct {
	match string
	C     chan struct{}
	once  sync.Once
}

func newSignal(match string) *signal { return &signal{match: match, C: make(chan struct{})} }

func (s *signal) Write(p []byte) (int, error) {
	if strings.Contains(string(p), s.match) {
		s.once.Do(func() { close(s.C) })
	}
	return len(p), nil
}

// await blocks until ch is closed or receives.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(wait):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// startDeployment stands in, for the example, for a running turnstream
// deployment: an embedded NATS server with the streams the workers create,
// and the consumer of the tool "shout", which they create before they
// dispatch its first call.
func startDeployment() (url string, stop func(), err error) {
	dir, err := os.MkdirTemp("", "toolworker-example-")
	if err != nil {
		return "", nil, err
	}
	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true,
	})
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	srv.Start()
	if !srv.ReadyForConnections(wait) {
		srv.Shutdown()
		os.RemoveAll(dir)
		return "", nil, errors.New("embedded server not ready")
	}
	stop = func() {
		srv.Shutdown()
		srv.WaitForShutdown()
		os.RemoveAll(dir)
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		stop()
		return "", nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err = (bus.Topology{}).Ensure(ctx, js); err == nil {
			_, err = bus.Topology{}.EnsureToolConsumer(ctx, js, "shout")
		}
	}
	if err != nil {
		stop()
		return "", nil, err
	}
	return srv.ClientURL(), stop, nil
}

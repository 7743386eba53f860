package main

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/natstest"
)

// TestInboxPrefix runs every command that connects to NATS (streams,
// worker, tools, submit, tap) as a user who may subscribe only to its own
// inbox prefix (_INBOX_alice.>) and the subjects the roles subscribe to
// (turn.live.>, turn.cancel.>), through a whole turn with tool calls. Its
// replies, of every JetStream request (API calls, publish acks, pulled
// messages, key-value watches, batch direct gets (internal/directget), pkg/client's
// follow and tap), must come on that prefix: a spy subscribed to _INBOX.>
// sees none. The tools command takes the prefix from NATS_INBOX_PREFIX, the
// others from --inbox-prefix.
func TestInboxPrefix(t *testing.T) {
	const pass = "alice-secret"
	const prefix = "_INBOX_alice"
	srv := natstest.StartWithUsers(t,
		natstest.User("alice", pass, nil, []string{prefix + ".>", "turn.live.>", "turn.cancel.>"}),
		natstest.User("spy", "spy-secret", nil, nil))
	url := srv.URLAs("alice", pass)
	t.Setenv("NATS_INBOX_PREFIX", "") // the in-process commands use the flag

	// The spy sees every reply sent to the default inbox prefix.
	var spied sync.Mutex
	var defaultReplies []string
	spyConn := srv.ConnectAs("spy", "spy-secret")
	if _, err := spyConn.Subscribe("_INBOX.>", func(m *nats.Msg) {
		spied.Lock()
		defer spied.Unlock()
		defaultReplies = append(defaultReplies, m.Subject)
	}); err != nil {
		t.Fatal(err)
	}
	if err := spyConn.Flush(); err != nil {
		t.Fatal(err)
	}

	// The control: without the prefix, alice's requests get no reply,
	// since the server refuses her subscription to the default inbox.
	refused := make(chan error, 8)
	plain := srv.ConnectAs("alice", pass, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case refused <- err:
		default:
		}
	}))
	pjs, err := jetstream.New(plain)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	_, err = pjs.AccountInfo(ctx)
	cancel()
	if err == nil {
		t.Fatal("a request of alice without the inbox prefix was answered; want it refused (the test's permissions do not bite)")
	}
	select {
	case err := <-refused:
		if !errors.Is(err, nats.ErrPermissionViolation) {
			t.Fatalf("alice without the prefix: async error %v; want a permissions violation", err)
		}
	case <-time.After(cmdWait):
		t.Fatal("alice without the prefix: no permissions violation reported")
	}
	plain.Close()
	// The control's refused replies went to the default prefix: start
	// counting after them.
	if err := spyConn.Flush(); err != nil {
		t.Fatal(err)
	}
	spied.Lock()
	defaultReplies = nil
	spied.Unlock()

	ctx, cancel = context.WithTimeout(t.Context(), cmdWait)
	err = dispatch(ctx, []string{"streams", "--nats-url", url, "--inbox-prefix", prefix, "--log-level", "warn"}, &lockedBuffer{})
	cancel()
	if err != nil {
		t.Fatalf("streams: %v", err)
	}

	mock := httptest.NewServer(mockllm.New(mockllm.Default(mockllm.DefaultOptions{})))
	t.Cleanup(mock.Close)
	cfg := mockConfig(t, mock.URL+"/v1", "{drain_timeout: 5s}")
	worker := startCommand(t, "worker", "--config", cfg, "--nats-url", url, "--inbox-prefix", prefix, "--log-level", "warn")
	tools := startProcess(t, []string{"NATS_INBOX_PREFIX=" + prefix}, "tools", "--nats-url", url, "--log-level", "warn")
	tap := startCommand(t, "tap", "--all", "--json", "--nats-url", url, "--inbox-prefix", prefix)

	var out lockedBuffer
	ctx, cancel = context.WithTimeout(t.Context(), cmdWait)
	defer cancel()
	err = dispatch(ctx, []string{"submit", "--nats-url", url, "--inbox-prefix", prefix, "--session", "alice", "--demo-tools", "What is 17 * 23?"}, &out)
	if err != nil {
		t.Fatalf("submit: %v\n%s\ntools' stderr:\n%s", err, out.String(), tools.String())
	}
	for _, want := range []string{"← calculate: 391", "turn.completed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("submit printed no %q:\n%s", want, out.String())
		}
	}
	tap.waitOutput(t, "the turn's end", func(out string) bool { return strings.Contains(out, `"type":"turn.completed"`) })
	for _, r := range []*running{tap, worker} {
		if err := r.wait(t); err != nil {
			t.Errorf("command stopped with %v; want nil", err)
		}
	}
	if err := spyConn.Flush(); err != nil {
		t.Fatal(err)
	}
	spied.Lock()
	defer spied.Unlock()
	if len(defaultReplies) > 0 {
		t.Errorf("%d replies went to the default inbox prefix (%q...); want none", len(defaultReplies), defaultReplies[0])
	}
}

// startProcess runs `turnstream args...` as a child process (this test
// binary, see TestMain) with env added to the environment, and kills it
// when the test ends. It returns the child's stderr.
func startProcess(t *testing.T, env []string, args ...string) *lockedBuffer {
	t.Helper()
	return startMainWith(t, env, args...).stderr
}

package deploy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// wait bounds every blocking step so that a bug fails a test instead of
// hanging it; it is never a performance assertion.
const wait = 30 * time.Second

// serverConf is the configuration under test.
const serverConf = "nats/nats-server.conf"

// The users of the configuration: their accounts, and the variables their
// passwords come from.
var roles = []struct{ user, account, env string }{
	{"client", "CLIENTS", "TURNSTREAM_CLIENT_PASSWORD"},
	{"worker", "TURNSTREAM", "TURNSTREAM_WORKER_PASSWORD"},
	{"operator", "TURNSTREAM", "TURNSTREAM_OPERATOR_PASSWORD"},
	{"toolworker", "TOOLS", "TURNSTREAM_TOOLWORKER_PASSWORD"},
	{"auditor", "AUDIT", "TURNSTREAM_AUDITOR_PASSWORD"},
	{"sys", "SYS", "TURNSTREAM_SYS_PASSWORD"},
}

// keyEnv holds the key JetStream encrypts its store with.
const keyEnv = "TURNSTREAM_JS_KEY"

// testKey is the test encryption key (letters and digits, as a password).
const testKey = "k4f1c9e2b7a3d5e8f0a1b2c3d4e5f6a7b"

// password is the test password of user (letters and digits, starting with a
// letter, as the configuration asks).
func password(user string) string { return "p" + user + "7e3f1a9c" }

// inbox is the private inbox prefix of user: the only replies it may
// subscribe to.
func inbox(user string) string { return "_INBOX_" + user }

// setPasswords sets every variable the configuration reads: the passwords
// and the encryption key.
func setPasswords(t *testing.T) {
	t.Helper()
	for _, r := range roles {
		t.Setenv(r.env, password(r.user))
	}
	t.Setenv(keyEnv, testKey)
}

// loadConfig parses a configuration file as nats-server -c does, then points
// it at loopback: a random client port, no monitoring port, a store in a
// test directory.
func loadConfig(t *testing.T, path string) *server.Options {
	t.Helper()
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("ProcessConfigFile(%s) = %v", path, err)
	}
	opts.Host = "127.0.0.1"
	opts.Port = -1
	opts.HTTPHost = ""
	opts.HTTPPort = 0
	opts.StoreDir = t.TempDir()
	opts.NoLog = true
	opts.NoSigs = true
	return opts
}

// startServer runs a server with opts until the test ends.
func startServer(t *testing.T, opts *server.Options) *server.Server {
	t.Helper()
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatalf("server.NewServer() = %v", err)
	}
	s.Start()
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready for connections")
	}
	return s
}

// asyncErrs records the asynchronous errors of a connection; a refused
// publish or subscription is reported this way.
type asyncErrs struct {
	mu   sync.Mutex
	errs []error
}

func (a *asyncErrs) handle(_ *nats.Conn, _ *nats.Subscription, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.errs = append(a.errs, err)
}

func (a *asyncErrs) all() []error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]error(nil), a.errs...)
}

// violation reports whether the server refused op ("Publish" or
// "Subscription") on subject. The server's message is the only place that
// names the subject, so it is matched as text.
func (a *asyncErrs) violation(op, subject string) bool {
	want := fmt.Sprintf("%s to %q", op, subject)
	for _, err := range a.all() {
		if errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), want) {
			return true
		}
	}
	return false
}

// conn is a connection of one user with its recorded async errors.
type conn struct {
	*nats.Conn
	user string
	errs *asyncErrs
}

// connect connects as user, with its private inbox prefix, and closes the
// connection when the test ends.
func connect(t *testing.T, url, user string) *conn {
	t.Helper()
	errs := &asyncErrs{}
	nc, err := nats.Connect(url,
		nats.UserInfo(user, password(user)),
		nats.CustomInboxPrefix(inbox(user)),
		nats.Name("deploy test "+user),
		nats.ErrorHandler(errs.handle),
	)
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	return &conn{Conn: nc, user: user, errs: errs}
}

// expectViolation waits until the server has refused op on subject for c.
func (c *conn) expectViolation(t *testing.T, op, subject string) {
	t.Helper()
	if err := c.FlushTimeout(wait); err != nil {
		t.Fatalf("%s: flush: %v", c.user, err)
	}
	deadline := time.Now().Add(wait)
	for !c.errs.violation(op, subject) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s to %q was not refused; async errors: %v", c.user, op, subject, c.errs.all())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// expectNoErrors fails if c saw any asynchronous error, such as a refused
// publish.
func (c *conn) expectNoErrors(t *testing.T) {
	t.Helper()
	if err := c.FlushTimeout(wait); err != nil {
		t.Fatalf("%s: flush: %v", c.user, err)
	}
	if errs := c.errs.all(); len(errs) > 0 {
		t.Errorf("%s: async errors %v; want none", c.user, errs)
	}
}

// shortCtx bounds a request the server is expected to drop: a refused
// request gets no reply, so it ends with this deadline.
func shortCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	t.Cleanup(cancel)
	return ctx
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	t.Cleanup(cancel)
	return ctx
}

// loadConfigErr parses a configuration file and returns its error.
func loadConfigErr(path string) (*server.Options, error) {
	return server.ProcessConfigFile(path)
}

// unsetenv removes a variable for the rest of the test; call t.Setenv on it
// first so that it is restored.
func unsetenv(t *testing.T, key string) {
	t.Helper()
	if err := os.Unsetenv(key); err != nil {
		t.Fatalf("unsetenv %s: %v", key, err)
	}
}

package natstest

import (
	"net"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/embedded"
)

// Server is an embedded JetStream server owned by a test.
type Server struct {
	t        testing.TB
	storeDir string
	users    []*server.User
	srv      *server.Server
	// addr is where the server first listened: Restart listens there
	// again.
	addr string
}

// Start runs an embedded JetStream server on a random loopback port with its
// store in t.TempDir(). It is shut down when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartOn(t, "127.0.0.1:-1")
}

// StartOn is Start on a given client address (host:port), such as a
// FreePort that clients were pointed at before any server ran.
func StartOn(t testing.TB, listen string) *Server {
	t.Helper()
	s := &Server{t: t, storeDir: t.TempDir()}
	s.start(listen)
	t.Cleanup(s.Shutdown)
	return s
}

// StartWithUsers is Start on a server that accepts only users (see
// User), such as one whose permissions confine it to its own inbox prefix.
// Connect and JetStream then need credentials in the URL; use
// ConnectAs.
func StartWithUsers(t testing.TB, users ...*server.User) *Server {
	t.Helper()
	s := &Server{t: t, storeDir: t.TempDir(), users: users}
	s.start("127.0.0.1:-1")
	t.Cleanup(s.Shutdown)
	return s
}

// User is a user of StartWithUsers: it may publish to pub and subscribe
// to sub (nil: anything).
func User(name, password string, pub, sub []string) *server.User {
	u := &server.User{Username: name, Password: password}
	if pub != nil || sub != nil {
		u.Permissions = &server.Permissions{}
		if pub != nil {
			u.Permissions.Publish = &server.SubjectPermission{Allow: pub}
		}
		if sub != nil {
			u.Permissions.Subscribe = &server.SubjectPermission{Allow: sub}
		}
	}
	return u
}

// URLAs is the server's client URL with a user's credentials.
func (s *Server) URLAs(user, password string) string {
	u, err := url.Parse(s.URL())
	if err != nil {
		s.t.Fatalf("natstest: %v", err)
	}
	u.User = url.UserPassword(user, password)
	return u.String()
}

// ConnectAs opens a connection as user with the extra options, closed when
// the test ends.
func (s *Server) ConnectAs(user, password string, opts ...nats.Option) *nats.Conn {
	s.t.Helper()
	nc, err := nats.Connect(s.URLAs(user, password), append([]nats.Option{nats.Name(s.t.Name() + " " + user)}, opts...)...)
	if err != nil {
		s.t.Fatalf("natstest: connect as %s: %v", user, err)
	}
	s.t.Cleanup(nc.Close)
	return nc
}

// FreePort is a loopback port that was free when it returned, for a
// server a test starts later (StartOn); another process may take it in
// between, as with any reserved-then-freed port.
func FreePort(t testing.TB) int {
	t.Helper()
	return freePorts(t, 1)[0]
}

func (s *Server) start(listen string) {
	s.t.Helper()
	srv, err := embedded.Start(embedded.Options{Listen: listen, StoreDir: s.storeDir, Users: s.users})
	if err != nil {
		s.t.Fatalf("natstest: %v", err)
	}
	s.srv = srv
	if s.addr == "" {
		s.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(srv.Addr().(*net.TCPAddr).Port))
	}
}

// URL is the server's client URL.
func (s *Server) URL() string { return s.srv.ClientURL() }

// Shutdown stops the server and waits for it. It is idempotent.
func (s *Server) Shutdown() {
	if s.srv == nil {
		return
	}
	s.srv.Shutdown()
	s.srv.WaitForShutdown()
}

// Restart stops the server, unless Shutdown did, and starts it again on
// the same port and store, as a crashed and restarted node would come
// back.
func (s *Server) Restart() {
	s.t.Helper()
	s.Shutdown()
	s.start(s.addr)
}

// Connect opens a client connection closed when the test ends. It reconnects
// forever, so it survives Restart.
func (s *Server) Connect() *nats.Conn { return connect(s.t, s.URL()) }

// JetStream opens a connection and its JetStream context.
func (s *Server) JetStream() (*nats.Conn, jetstream.JetStream) {
	return withJetStream(s.t, s.Connect())
}

// connect opens a connection to urls that reconnects forever (it survives
// restarts and killed nodes), closed when the test ends.
func connect(t testing.TB, urls string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(urls,
		nats.MaxReconnects(-1),
		nats.ReconnectWait(20*time.Millisecond),
		nats.Name(t.Name()),
	)
	if err != nil {
		t.Fatalf("natstest: connect to %s: %v", urls, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func withJetStream(t testing.TB, nc *nats.Conn) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("natstest: jetstream: %v", err)
	}
	return nc, js
}

// WaitConnected blocks until every connection is connected (after a
// Restart, clients reconnect on their own schedule), failing the test after
// ten seconds.
func WaitConnected(t testing.TB, conns ...*nats.Conn) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, nc := range conns {
		for !nc.IsConnected() {
			if time.Now().After(deadline) {
				t.Fatalf("natstest: connection %q did not reconnect: %v", nc.Opts.Name, nc.Status())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

package natstest

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/embedded"
)

// Account is the account the nodes' (unauthenticated) clients are in, and
// hence of every stream a test creates.
const Account = server.DEFAULT_GLOBAL_ACCOUNT

// ClusterWait bounds every wait of a Cluster (formation, a meta leader, a
// stream leader, a node catching up). Leader elections take a few seconds
// (nats-server's election timeout is 4 to 9 seconds), so this is generous.
const ClusterWait = 45 * time.Second

// ClusterOptions configure StartClusterWith.
type ClusterOptions struct {
	// Nodes is the number of servers, at least 2. Default 3.
	Nodes int
	// Name is the cluster name. Default "natstest".
	Name string
	// SyncAlways makes every node fsync each write before acknowledging it
	// (sync_interval: always). Default false, as nats-server's default.
	SyncAlways bool
}

// Cluster is a JetStream cluster of embedded servers owned by a test: each
// node listens on loopback (random client port, route port chosen at
// start), keeps its store in its own t.TempDir() and routes to every other
// node. Nodes keep their ports and store across Kill and Restart.
//
// Its methods fail the test (t.Fatalf), so call them from the test's
// goroutine.
type Cluster struct {
	t          testing.TB
	name       string
	syncAlways bool
	mu         sync.Mutex
	nodes      []*clusterNode
}

type clusterNode struct {
	name        string
	storeDir    string
	clientPort  int // -1 until the first start picks one
	clusterPort int
	srv         *server.Server // nil while down
}

// StartCluster starts a JetStream cluster of n nodes (3 normally, at least
// 2) and waits
// until it has a meta leader and every node is a current peer. It is shut
// down when the test ends.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	return StartClusterWith(t, ClusterOptions{Nodes: n})
}

// StartClusterWith is StartCluster with options.
func StartClusterWith(t testing.TB, o ClusterOptions) *Cluster {
	t.Helper()
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.Nodes < 2 {
		// nats-server expects at least two peers before a new meta group
		// elects a leader: a one-node cluster never becomes ready.
		t.Fatalf("natstest: a JetStream cluster of %d nodes never elects a meta leader; want 2 or more", o.Nodes)
	}
	if o.Name == "" {
		o.Name = "natstest"
	}
	c := &Cluster{t: t, name: o.Name, syncAlways: o.SyncAlways}
	for i, p := range freePorts(t, o.Nodes) {
		c.nodes = append(c.nodes, &clusterNode{
			name:        fmt.Sprintf("%s-%d", o.Name, i),
			storeDir:    t.TempDir(),
			clientPort:  -1,
			clusterPort: p,
		})
	}
	t.Cleanup(c.Shutdown)
	for i := range c.nodes {
		c.start(i)
	}
	c.WaitJetStreamReady()
	return c
}

// freePorts reserves n loopback ports by listening on them together, then
// frees them for the nodes' route listeners. The route URLs must be known
// before any node starts, since every node lists all of them.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("natstest: reserve a route port: %v", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

func (c *Cluster) routes() []string {
	var routes []string
	for _, n := range c.nodes {
		routes = append(routes, "nats-route://127.0.0.1:"+strconv.Itoa(n.clusterPort))
	}
	return routes
}

func (c *Cluster) start(i int) {
	c.t.Helper()
	n := c.node(i)
	srv, err := embedded.Start(embedded.Options{
		Listen:     net.JoinHostPort("127.0.0.1", strconv.Itoa(n.clientPort)),
		StoreDir:   n.storeDir,
		ServerName: n.name,
		SyncAlways: c.syncAlways,
		Cluster: embedded.Cluster{
			Name:   c.name,
			Listen: net.JoinHostPort("127.0.0.1", strconv.Itoa(n.clusterPort)),
			Routes: c.routes(),
		},
	})
	if err != nil {
		c.t.Fatalf("natstest: start node %d (%s): %v", i, n.name, err)
	}
	c.mu.Lock()
	n.srv = srv
	n.clientPort = srv.Addr().(*net.TCPAddr).Port
	c.mu.Unlock()
}

func (c *Cluster) node(i int) *clusterNode {
	c.t.Helper()
	if i < 0 || i >= len(c.nodes) {
		c.t.Fatalf("natstest: no node %d in a cluster of %d", i, len(c.nodes))
	}
	return c.nodes[i]
}

// Len is the number of nodes, running or not.
func (c *Cluster) Len() int { return len(c.nodes) }

// URLs is the comma-separated client URLs of every node (running or not),
// as nats.Connect takes them.
func (c *Cluster) URLs() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	urls := make([]string, 0, len(c.nodes))
	for _, n := range c.nodes {
		urls = append(urls, "nats://127.0.0.1:"+strconv.Itoa(n.clientPort))
	}
	return strings.Join(urls, ",")
}

// Node is node i's server, nil while it is killed.
func (c *Cluster) Node(i int) *server.Server {
	c.t.Helper()
	n := c.node(i)
	c.mu.Lock()
	defer c.mu.Unlock()
	return n.srv
}

// running returns the servers that are up, by index (nil for a killed one).
func (c *Cluster) running() []*server.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	srvs := make([]*server.Server, len(c.nodes))
	for i, n := range c.nodes {
		if n.srv != nil && n.srv.Running() {
			srvs[i] = n.srv
		}
	}
	return srvs
}

// Kill stops node i at once, as a crashed process would go: its clients'
// connections drop without lame-duck mode, its routes break and its Raft
// groups lose a peer. (In-process this is a shutdown: the server closes its
// store files as it stops, so this does not model losing unsynced writes;
// see SyncAlways.) Killing a killed node fails the test.
func (c *Cluster) Kill(i int) {
	c.t.Helper()
	n := c.node(i)
	c.mu.Lock()
	srv := n.srv
	n.srv = nil
	c.mu.Unlock()
	if srv == nil {
		c.t.Fatalf("natstest: kill node %d: it is not running", i)
	}
	srv.Shutdown()
	srv.WaitForShutdown()
}

// Restart starts killed node i again on its ports and store, with the same
// name and routes, as a restarted node comes back. It returns once the node
// accepts clients and routes; use WaitJetStreamReady or WaitStreamCurrent
// to wait for it to catch up.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	if c.Node(i) != nil {
		c.t.Fatalf("natstest: restart node %d: it is running; Kill it first", i)
	}
	c.start(i)
}

// Shutdown stops every running node and waits for them. It is idempotent
// and runs when the test ends.
func (c *Cluster) Shutdown() {
	c.mu.Lock()
	var srvs []*server.Server
	for _, n := range c.nodes {
		if n.srv != nil {
			srvs = append(srvs, n.srv)
			n.srv = nil
		}
	}
	c.mu.Unlock()
	for _, s := range srvs {
		s.Shutdown()
	}
	for _, s := range srvs {
		s.WaitForShutdown()
	}
}

// Connect opens a client connection to the cluster (any node), closed when
// the test ends. It reconnects forever, so it survives nodes being killed
// and restarted.
func (c *Cluster) Connect() *nats.Conn { return connect(c.t, c.URLs()) }

// JetStream opens a connection to the cluster and its JetStream context.
func (c *Cluster) JetStream() (*nats.Conn, jetstream.JetStream) {
	return withJetStream(c.t, c.Connect())
}

// MetaLeader is the index of the node leading the JetStream meta group, or
// -1 while there is none (or, during an election, more than one claims it).
func (c *Cluster) MetaLeader() int {
	return only(c.running(), func(s *server.Server) bool { return s.JetStreamIsLeader() })
}

// WaitMetaLeader waits for a meta leader and returns its index.
func (c *Cluster) WaitMetaLeader() int {
	c.t.Helper()
	var leader int
	c.waitFor("a JetStream meta leader", func() error {
		if leader = c.MetaLeader(); leader < 0 {
			return errors.New("no meta leader")
		}
		return nil
	})
	return leader
}

// WaitJetStreamReady waits until the running nodes have one meta leader,
// the leader counts every running node as an online JetStream peer, and
// every running node's meta state is current: the cluster then places
// streams on any of them.
func (c *Cluster) WaitJetStreamReady() {
	c.t.Helper()
	c.waitFor("the JetStream cluster to be ready", func() error {
		srvs := c.running()
		leader := only(srvs, func(s *server.Server) bool { return s.JetStreamIsLeader() })
		if leader < 0 {
			return errors.New("no meta leader")
		}
		up := 0
		for i, s := range srvs {
			if s == nil {
				continue
			}
			up++
			if !s.JetStreamIsCurrent() {
				return fmt.Errorf("node %d is not current", i)
			}
		}
		if peers := srvs[leader].JetStreamClusterPeers(); len(peers) != up {
			return fmt.Errorf("meta leader %d sees peers %v; want %d", leader, peers, up)
		}
		return nil
	})
}

// StreamLeader is the index of the node leading the stream's Raft group
// (in Account), or -1 while there is none.
func (c *Cluster) StreamLeader(stream string) int {
	return only(c.running(), func(s *server.Server) bool { return s.JetStreamIsStreamLeader(Account, stream) })
}

// WaitStreamLeader waits for the stream to have a leader and returns its
// index.
func (c *Cluster) WaitStreamLeader(stream string) int {
	c.t.Helper()
	var leader int
	c.waitFor("a leader of stream "+stream, func() error {
		if leader = c.StreamLeader(stream); leader < 0 {
			return errors.New("no stream leader")
		}
		return nil
	})
	return leader
}

// KillStreamLeader waits for the stream's leader, kills it and returns its
// index.
func (c *Cluster) KillStreamLeader(stream string) int {
	c.t.Helper()
	leader := c.WaitStreamLeader(stream)
	c.Kill(leader)
	return leader
}

// WaitStreamCurrent waits until node i's replica of the stream is current:
// it follows the stream's Raft group and is not catching up.
func (c *Cluster) WaitStreamCurrent(i int, stream string) {
	c.t.Helper()
	c.waitFor(fmt.Sprintf("node %d to be current on stream %s", i, stream), func() error {
		s := c.Node(i)
		if s == nil {
			return errors.New("node is down")
		}
		if !s.JetStreamIsStreamCurrent(Account, stream) {
			return errors.New("not current")
		}
		return nil
	})
}

// StreamState is node i's own replica's state of the stream (what that
// node has stored, not what the leader reports); false when node i is down
// or holds no replica.
func (c *Cluster) StreamState(i int, stream string) (server.StreamState, bool) {
	c.t.Helper()
	s := c.Node(i)
	if s == nil {
		return server.StreamState{}, false
	}
	info, err := s.Jsz(&server.JSzOptions{Account: Account, Streams: true})
	if err != nil {
		return server.StreamState{}, false
	}
	for _, acc := range info.AccountDetails {
		for _, sd := range acc.Streams {
			if sd.Name == stream {
				return sd.State, true
			}
		}
	}
	return server.StreamState{}, false
}

// waitFor polls check until it returns nil, failing the test with what and
// check's last error after ClusterWait.
func (c *Cluster) waitFor(what string, check func() error) {
	c.t.Helper()
	deadline := time.Now().Add(ClusterWait)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("natstest: waited %s for %s: %v", ClusterWait, what, err)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// only is the index of the one running server for which is holds, or -1
// when none or several do.
func only(srvs []*server.Server, is func(*server.Server) bool) int {
	found := -1
	for i, s := range srvs {
		if s == nil || !is(s) {
			continue
		}
		if found >= 0 {
			return -1
		}
		found = i
	}
	return found
}

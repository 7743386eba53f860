package embedded

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Options configure an in-process NATS server with JetStream.
type Options struct {
	// Listen is host:port for clients. Default "127.0.0.1:-1" (a random
	// loopback port); port -1 means random.
	Listen string
	// StoreDir is the JetStream store directory. Required.
	StoreDir string
	// ServerName names the server. Default "turnstream". Every node of a
	// cluster needs its own: JetStream places replicas by server name.
	ServerName string
	// ReadyTimeout bounds the wait for the server to accept clients (and,
	// when clustered, routes). Default 10s.
	ReadyTimeout time.Duration
	// SyncAlways makes JetStream fsync every write to its store before
	// acknowledging it, as `jetstream { sync_interval: always }` does in a
	// configuration file. Default false: the server's own default, a
	// background fsync every 2 minutes, which loses acknowledged writes
	// when the machine (not only the process) goes down. Costs a disk flush
	// per write; replicated streams flush less often, since their Raft log
	// is synced instead.
	SyncAlways bool
	// Cluster joins the server to a cluster. Default none: a standalone
	// server.
	Cluster Cluster
	// Users are the only clients the server accepts, each with its
	// password and permissions (nil permissions: everything). Default
	// none: no authentication.
	Users []*server.User
}

// Cluster configures the routes of one node of a cluster. All nodes share
// Name and list the same Routes. The zero value means no cluster.
type Cluster struct {
	// Name of the cluster, the same on every node. Required when Listen
	// or Routes is set: JetStream refuses a cluster without a fixed name.
	Name string
	// Listen is host:port for routes from the other nodes. Required to
	// cluster; port -1 means random (useless for peers that must know it).
	Listen string
	// Routes are the route URLs (nats-route://host:port) of the nodes. A
	// node may list itself: it ignores that route. At least one is
	// required: a JetStream cluster needs configured routes.
	Routes []string
}

func (c Cluster) enabled() bool {
	return c.Name != "" || c.Listen != "" || len(c.Routes) > 0
}

// Validate reports an incomplete cluster configuration.
func (c Cluster) Validate() error {
	if !c.enabled() {
		return nil
	}
	if c.Name == "" {
		return errors.New("embedded: cluster needs a name")
	}
	if c.Listen == "" {
		return errors.New("embedded: cluster needs a route listen address")
	}
	if len(c.Routes) == 0 {
		return errors.New("embedded: cluster needs at least one route")
	}
	return nil
}

// Validate reports options that cannot start a server.
func (o Options) Validate() error {
	if o.StoreDir == "" {
		return errors.New("embedded: embedded server needs a store directory")
	}
	return o.Cluster.Validate()
}

// Start starts an in-process NATS server with JetStream enabled and
// waits until it accepts connections. The caller owns it: Shutdown, then
// WaitForShutdown.
func Start(o Options) (*server.Server, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Listen == "" {
		o.Listen = "127.0.0.1:-1"
	}
	if o.ServerName == "" {
		o.ServerName = "turnstream"
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = 10 * time.Second
	}
	host, port, err := hostPort("listen", o.Listen)
	if err != nil {
		return nil, err
	}
	opts := &server.Options{
		ServerName: o.ServerName,
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   o.StoreDir,
		NoLog:      true,
		NoSigs:     true,
		// Chunks of one attempt can be large; keep the default 1 MiB payload
		// limit explicit so a deployment can compare.
		MaxPayload: 1 << 20,
		Users:      o.Users,
	}
	if o.SyncAlways {
		// What the config parser sets for sync_interval: always. The
		// interval still drives the background sync of what SyncAlways
		// relaxes (replicated streams sync through their Raft log).
		opts.SyncAlways = true
		opts.SyncInterval = 2 * time.Minute
	}
	if o.Cluster.enabled() {
		if err := clusterOptions(opts, o.Cluster); err != nil {
			return nil, err
		}
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded: embedded server: %w", err)
	}
	s.Start()
	if !s.ReadyForConnections(o.ReadyTimeout) {
		s.Shutdown()
		s.WaitForShutdown()
		return nil, fmt.Errorf("embedded: embedded server not ready after %s", o.ReadyTimeout)
	}
	return s, nil
}

func clusterOptions(opts *server.Options, c Cluster) error {
	host, port, err := hostPort("cluster listen", c.Listen)
	if err != nil {
		return err
	}
	opts.Cluster.Name = c.Name
	opts.Cluster.Host = host
	opts.Cluster.Port = port
	for _, r := range c.Routes {
		u, err := url.Parse(r)
		if err != nil {
			return fmt.Errorf("embedded: route %q: %w", r, err)
		}
		if u.Host == "" {
			return fmt.Errorf("embedded: route %q has no host", r)
		}
		opts.Routes = append(opts.Routes, u)
	}
	return nil
}

func hostPort(what, addr string) (string, int, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("embedded: %s address %q: %w", what, addr, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return "", 0, fmt.Errorf("embedded: %s port %q: %w", what, portText, err)
	}
	return host, port, nil
}

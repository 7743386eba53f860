package deploy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/wire"
)

// includeLine is the commented include of cluster.conf in nats-server.conf.
const includeLine = `# include "cluster.conf"`

// TestCluster runs the 3-node cluster of cluster.conf (nats-server.conf
// with its include uncommented) on loopback, creates the topology with 3
// replicas as the worker user, and submits a turn as the client user
// through another node.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node JetStream cluster")
	}
	setPasswords(t)
	dir := t.TempDir()
	main, err := os.ReadFile(serverConf)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(main), includeLine) {
		t.Fatalf("%s has no line %q to enable the cluster with", serverConf, includeLine)
	}
	main = []byte(strings.Replace(string(main), includeLine, `include "cluster.conf"`, 1))
	clusterConf, err := os.ReadFile("nats/cluster.conf")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"nats-server.conf": main, "cluster.conf": clusterConf} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	ports := freePorts(t, 3)
	t.Setenv("TURNSTREAM_ROUTE_PASSWORD", "proute5b1d")
	for i, p := range ports {
		t.Setenv(fmt.Sprintf("TURNSTREAM_ROUTE_%d", i+1), fmt.Sprintf("nats-route://route:proute5b1d@127.0.0.1:%d", p))
	}
	var nodes []*server.Server
	for i, p := range ports {
		name := fmt.Sprintf("nats-%d", i+1)
		t.Setenv("TURNSTREAM_SERVER_NAME", name)
		opts := loadConfig(t, filepath.Join(dir, "nats-server.conf"))
		if opts.ServerName != name {
			t.Errorf("server_name = %q; want %q from cluster.conf", opts.ServerName, name)
		}
		if opts.Cluster.Name != "turnstream" || len(opts.Routes) != 3 {
			t.Fatalf("cluster %q with %d routes; want turnstream with 3", opts.Cluster.Name, len(opts.Routes))
		}
		if opts.Cluster.Username != "route" || opts.Cluster.Password != "proute5b1d" {
			t.Errorf("cluster authorization = %q/%q; want route and the password from the environment", opts.Cluster.Username, opts.Cluster.Password)
		}
		opts.Cluster.Host = "127.0.0.1"
		opts.Cluster.Port = p
		nodes = append(nodes, startServer(t, opts))
	}

	worker := connect(t, nodes[0].ClientURL(), "worker")
	wjs, err := jetstream.New(worker.Conn)
	if err != nil {
		t.Fatal(err)
	}
	topo := bus.Topology{Replicas: 3}
	// The JetStream meta group elects a leader once the routes are up.
	deadline := time.Now().Add(wait)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		err := topo.Ensure(ctx, wjs)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker: Topology.Ensure() with 3 replicas = %v", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	for _, cfg := range topo.Streams() {
		s, err := wjs.Stream(ctxFor(t), cfg.Name)
		if err != nil {
			t.Fatalf("stream %s: %v", cfg.Name, err)
		}
		info := s.CachedInfo()
		if info.Config.Replicas != 3 || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
			t.Errorf("stream %s: %d replicas, cluster %+v; want a leader and 2 replicas", cfg.Name, info.Config.Replicas, info.Cluster)
		}
	}

	c := connect(t, nodes[2].ClientURL(), "client")
	cl, err := client.New(c.Conn)
	if err != nil {
		t.Fatal(err)
	}
	turn, err := cl.Submit(ctxFor(t), wire.TurnRequest{
		SessionID: "cluster", Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "hi"}},
	})
	if err != nil {
		t.Fatalf("client: Submit() through nats-3 = %v", err)
	}
	turn.Close()
	submit, err := wjs.Stream(ctxFor(t), wire.StreamSubmit)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := submit.GetLastMsgForSubject(ctxFor(t), "turn.submit.cluster"); err != nil {
		t.Errorf("submitted request not stored: %v", err)
	}
	for _, cn := range []*conn{worker, c} {
		cn.expectNoErrors(t)
	}
}

// freePorts returns n loopback ports that were free a moment ago.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			t.Fatal(err)
		}
	}
	return ports
}

package natstest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/natstest"
)

// retry runs op until it succeeds, each try bounded by a short timeout,
// failing the test with what and the last error after natstest.ClusterWait.
// Writes to a cluster fail for a while around a leader change (no
// responders, timeouts); a client retries them.
func retry(t *testing.T, what string, op func(ctx context.Context) error) {
	t.Helper()
	deadline := time.Now().Add(natstest.ClusterWait)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		err := op(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after %s: %v", what, natstest.ClusterWait, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// publish publishes n messages to subject, numbered from first, each with a
// message id so that a retried publish whose first try was stored is not
// stored twice.
func publish(t *testing.T, js jetstream.JetStream, subject string, first, n int) {
	t.Helper()
	for i := first; i < first+n; i++ {
		id := fmt.Sprintf("m-%d", i)
		retry(t, "publish "+id, func(ctx context.Context) error {
			_, err := js.Publish(ctx, subject, []byte(id), jetstream.WithMsgID(id))
			return err
		})
	}
}

func streamMsgs(t *testing.T, js jetstream.JetStream, stream string) uint64 {
	t.Helper()
	var msgs uint64
	retry(t, "stream info "+stream, func(ctx context.Context) error {
		s, err := js.Stream(ctx, stream)
		if err != nil {
			return err
		}
		info, err := s.Info(ctx)
		if err != nil {
			return err
		}
		msgs = info.State.Msgs
		return nil
	})
	return msgs
}

// TestClusterStreamSurvivesLeaderKill checks that an R3 stream keeps
// taking writes after its leader is killed (another node is elected) and
// that the killed node, restarted on its store, catches up with the writes
// it missed.
func TestClusterStreamSurvivesLeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node JetStream cluster and waits for elections")
	}
	c := natstest.StartCluster(t, 3)
	_, js := c.JetStream()

	const stream = "ORDERS"
	retry(t, "create stream", func(ctx context.Context) error {
		_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name:     stream,
			Subjects: []string{"orders.>"},
			Replicas: 3,
		})
		return err
	})
	publish(t, js, "orders.new", 0, 10)

	killed := c.KillStreamLeader(stream)
	if c.Node(killed) != nil {
		t.Fatalf("Node(%d) after KillStreamLeader = running; want nil", killed)
	}
	leader := c.WaitStreamLeader(stream)
	if leader == killed {
		t.Fatalf("WaitStreamLeader() = %d, the killed node", leader)
	}

	publish(t, js, "orders.new", 10, 10)
	if got := streamMsgs(t, js, stream); got != 20 {
		t.Fatalf("stream %s holds %d messages after the leader change; want 20", stream, got)
	}

	c.Restart(killed)
	c.WaitJetStreamReady()
	c.WaitStreamCurrent(killed, stream)
	deadline := time.Now().Add(natstest.ClusterWait)
	for {
		st, ok := c.StreamState(killed, stream)
		if ok && st.Msgs == 20 && st.LastSeq == 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("restarted node %d holds %+v (found %v); want 20 messages up to sequence 20", killed, st, ok)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The restarted node is a full replica again: with another node down
	// the stream still has a quorum and takes writes.
	other := (killed + 1) % c.Len()
	c.Kill(other)
	publish(t, js, "orders.new", 20, 5)
	if got := streamMsgs(t, js, stream); got != 25 {
		t.Fatalf("stream %s holds %d messages with node %d down; want 25", stream, got, other)
	}
}

// TestClusterKillRestart checks that killing the meta leader leaves a
// quorum that elects another, and that the restarted node comes back on the
// same client port (and options) with its clients reconnected and the
// cluster ready.
func TestClusterKillRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node JetStream cluster")
	}
	c := natstest.StartClusterWith(t, natstest.ClusterOptions{Nodes: 3, SyncAlways: true})
	nc := c.Connect()
	urls := c.URLs()
	meta := c.WaitMetaLeader()

	c.Kill(meta)
	if got := c.MetaLeader(); got == meta {
		t.Fatalf("MetaLeader() = %d after killing it", got)
	}
	// Two of three nodes keep a quorum and elect a new meta leader.
	if got := c.WaitMetaLeader(); got == meta {
		t.Fatalf("WaitMetaLeader() = %d, the killed node", got)
	}
	c.Restart(meta)
	if got := c.URLs(); got != urls {
		t.Fatalf("URLs() after Restart = %q; want %q", got, urls)
	}
	c.WaitJetStreamReady()
	natstest.WaitConnected(t, nc)
	for i := range c.Len() {
		if !c.Node(i).JetStreamConfig().SyncAlways {
			t.Errorf("node %d: JetStream SyncAlways = false; want true (ClusterOptions.SyncAlways)", i)
		}
	}
	if err := nc.FlushTimeout(10 * time.Second); err != nil {
		t.Fatalf("Flush() after Restart = %v", err)
	}
}

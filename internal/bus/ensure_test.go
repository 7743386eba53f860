package bus

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/pkg/wire"
)

// ensureWait bounds the waits of these tests; none of them should come
// near it.
const ensureWait = 30 * time.Second

// retryLog records EnsureRetry's onRetry calls.
type retryLog struct {
	mu    sync.Mutex
	calls []int
	errs  []error
	first chan struct{}
}

func newRetryLog() *retryLog { return &retryLog{first: make(chan struct{})} }

func (r *retryLog) onRetry(attempt int, err error, next time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.calls) == 0 {
		close(r.first)
	}
	r.calls = append(r.calls, attempt)
	r.errs = append(r.errs, err)
}

func (r *retryLog) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

// waitFirst waits for the first onRetry call.
func (r *retryLog) waitFirst(t *testing.T) {
	t.Helper()
	select {
	case <-r.first:
	case <-time.After(ensureWait):
		t.Fatalf("EnsureRetry did not retry within %s", ensureWait)
	}
}

// ensureResult waits for EnsureRetry's result on done.
func ensureResult(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(ensureWait):
		t.Fatalf("EnsureRetry did not return within %s", ensureWait)
		return nil
	}
}

// offlineJetStream connects to a loopback port where no server runs yet.
// It retries the connection forever and buffers nothing while
// disconnected, so every request fails at once until a server comes.
func offlineJetStream(t *testing.T, port int) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect("nats://127.0.0.1:"+strconv.Itoa(port),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(50*time.Millisecond),
		nats.ReconnectBufSize(-1),
	)
	if err != nil {
		t.Fatalf("nats.Connect() = %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream.New() = %v", err)
	}
	return js
}

// TestEnsureRetryServerStartsLater starts the server only after EnsureRetry
// has failed at least once: it keeps trying and creates the topology once
// the server is up.
func TestEnsureRetryServerStartsLater(t *testing.T) {
	port := natstest.FreePort(t)
	js := offlineJetStream(t, port)
	r := newRetryLog()
	done := make(chan error, 1)
	go func() { done <- EnsureRetry(t.Context(), js, Topology{}, r.onRetry) }()

	r.waitFirst(t)
	natstest.StartOn(t, "127.0.0.1:"+strconv.Itoa(port))
	if err := ensureResult(t, done); err != nil {
		t.Fatalf("EnsureRetry() = %v; want nil once the server is up", err)
	}
	r.mu.Lock()
	for i, attempt := range r.calls {
		if attempt != i+1 {
			t.Errorf("onRetry call %d had attempt %d; want %d", i, attempt, i+1)
		}
	}
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	for _, cfg := range (Topology{}).Streams() {
		if _, err := js.Stream(ctx, cfg.Name); err != nil {
			t.Errorf("stream %s after EnsureRetry: %v", cfg.Name, err)
		}
	}
}

// TestEnsureRetryContextEnds checks that EnsureRetry gives up when its
// context ends, with the context's error.
func TestEnsureRetryContextEnds(t *testing.T) {
	t.Run("cancelled while retrying", func(t *testing.T) {
		js := offlineJetStream(t, natstest.FreePort(t))
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		r := newRetryLog()
		done := make(chan error, 1)
		go func() { done <- EnsureRetry(ctx, js, Topology{}, r.onRetry) }()
		r.waitFirst(t)
		cancel()
		err := ensureResult(t, done)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("EnsureRetry() after cancel = %v; want context.Canceled", err)
		}
		if !errors.Is(err, nats.ErrReconnectBufExceeded) {
			t.Errorf("EnsureRetry() after cancel = %v; want it to carry the last attempt's error", err)
		}
	})
	t.Run("cancelled before", func(t *testing.T) {
		_, js := natstest.Start(t).JetStream()
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		r := newRetryLog()
		err := EnsureRetry(ctx, js, Topology{}, r.onRetry)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("EnsureRetry(cancelled ctx) = %v; want context.Canceled", err)
		}
		if n := r.count(); n != 0 {
			t.Errorf("EnsureRetry(cancelled ctx) retried %d times; want 0", n)
		}
		if _, err := js.Stream(t.Context(), wire.StreamSubmit); !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Errorf("stream %s after a cancelled EnsureRetry: %v; want not found", wire.StreamSubmit, err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		js := offlineJetStream(t, natstest.FreePort(t))
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- EnsureRetry(ctx, js, Topology{}, nil) }()
		if err := ensureResult(t, done); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("EnsureRetry() past its deadline = %v; want context.DeadlineExceeded", err)
		}
	})
}

// TestEnsureRetryPermanent checks that errors retrying cannot fix return
// from the first attempt.
func TestEnsureRetryPermanent(t *testing.T) {
	tests := []struct {
		name  string
		topo  Topology
		setup func(t *testing.T, nc *nats.Conn, js jetstream.JetStream)
		want  func(err error) bool
	}{
		{
			name: "stream config the server rejects",
			topo: Topology{ChunkMaxAge: time.Millisecond},
			want: isAPIErrorCode(errCodeStreamInvalidConfig),
		},
		{
			name: "replicas on a single server",
			topo: Topology{Replicas: 3},
			want: isAPIErrorCode(errCodeReplicasNotSupported),
		},
		{
			name: "subjects taken by another stream (400)",
			setup: func(t *testing.T, _ *nats.Conn, js jetstream.JetStream) {
				if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"turn.submit.>"}}); err != nil {
					t.Fatalf("CreateStream(OTHER) = %v", err)
				}
			},
			want: func(err error) bool {
				var apiErr *jetstream.APIError
				return errors.As(err, &apiErr) && apiErr.Code == 400
			},
		},
		{
			name:  "closed connection",
			setup: func(_ *testing.T, nc *nats.Conn, _ jetstream.JetStream) { nc.Close() },
			want:  func(err error) bool { return errors.Is(err, nats.ErrConnectionClosed) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc, js := natstest.Start(t).JetStream()
			if tt.setup != nil {
				tt.setup(t, nc, js)
			}
			r := newRetryLog()
			done := make(chan error, 1)
			go func() { done <- EnsureRetry(t.Context(), js, tt.topo, r.onRetry) }()
			err := ensureResult(t, done)
			if err == nil || !tt.want(err) {
				t.Fatalf("EnsureRetry() = %v; want the permanent error", err)
			}
			if n := r.count(); n != 0 {
				t.Errorf("EnsureRetry() retried %d times before %v; want 0", n, err)
			}
		})
	}
}

func isAPIErrorCode(code jetstream.ErrorCode) func(error) bool {
	return func(err error) bool {
		var apiErr *jetstream.APIError
		return errors.As(err, &apiErr) && apiErr.ErrorCode == code
	}
}

func TestPermanentEnsureError(t *testing.T) {
	api := func(code int, errCode jetstream.ErrorCode) error {
		return fmt.Errorf("bus: stream TURN_SUBMIT: %w", &jetstream.APIError{Code: code, ErrorCode: errCode})
	}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"bad request", api(400, jetstream.JSErrCodeBadRequest), true},
		{"subjects overlap", api(400, 10065), true},
		{"replicas not updatable", api(400, 10061), true},
		{"invalid stream config", api(500, errCodeStreamInvalidConfig), true},
		{"replicas not supported", api(500, errCodeReplicasNotSupported), true},
		{"no suitable peers", api(400, errCodeClusterNoPeers), false},
		{"member change in progress", api(400, errCodeMemberChangeInProgress), false},
		{"stream created meanwhile", fmt.Errorf("bus: stream X: %w", jetstream.ErrStreamNameAlreadyInUse), false},
		{"no meta leader", api(503, 10008), false},
		{"insufficient resources", api(503, 10023), false},
		{"jetstream starting", jetstream.ErrJetStreamNotEnabled, false},
		{"stream create failed", api(500, 10049), false},
		{"request timeout", fmt.Errorf("bus: stream X: %w", context.DeadlineExceeded), false},
		{"no responders", nats.ErrNoResponders, false},
		{"reconnecting", nats.ErrReconnectBufExceeded, false},
		{"closed", fmt.Errorf("bus: stream X: %w", nats.ErrConnectionClosed), true},
		{"jetstream closed", jetstream.ErrConnectionClosed, true},
		{"invalid stream name", jetstream.ErrInvalidStreamName, true},
		{"other", errors.New("boom"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := permanentEnsureError(tt.err); got != tt.want {
				t.Errorf("permanentEnsureError(%v) = %v; want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestReplicasFor(t *testing.T) {
	t.Run("single server", func(t *testing.T) {
		_, js := natstest.Start(t).JetStream()
		if got, err := ReplicasFor(t.Context(), js); err != nil || got != 1 {
			t.Fatalf("ReplicasFor(single server) = %d, %v; want 1", got, err)
		}
	})
	t.Run("standalone server naming a cluster", func(t *testing.T) {
		// A cluster block without routes: the INFO names a cluster, but
		// JetStream runs alone and cannot replicate.
		srv, err := server.NewServer(&server.Options{
			Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
			JetStream: true, StoreDir: t.TempDir(),
			Cluster: server.ClusterOpts{Name: "solo"},
		})
		if err != nil {
			t.Fatalf("server.NewServer() = %v", err)
		}
		srv.Start()
		t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
		if !srv.ReadyForConnections(10 * time.Second) {
			t.Fatal("server not ready")
		}
		nc, err := nats.Connect(srv.ClientURL())
		if err != nil {
			t.Fatalf("nats.Connect() = %v", err)
		}
		t.Cleanup(nc.Close)
		if got := nc.ConnectedClusterName(); got != "solo" {
			t.Fatalf("ConnectedClusterName() = %q; want solo", got)
		}
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatalf("jetstream.New() = %v", err)
		}
		// ReplicasFor cannot tell this from a cluster whose peers are
		// away, so it answers 3, and the server refuses R3 at once: the
		// operator configures the count.
		got, err := ReplicasFor(t.Context(), js)
		if err != nil || got != 3 {
			t.Fatalf("ReplicasFor(standalone JetStream in cluster solo) = %d, %v; want 3", got, err)
		}
		r := newRetryLog()
		err = EnsureRetry(t.Context(), js, Topology{Replicas: got}, r.onRetry)
		if !isAPIErrorCode(errCodeReplicasNotSupported)(err) {
			t.Fatalf("EnsureRetry(R3, standalone JetStream) = %v; want replicas not supported", err)
		}
		if n := r.count(); n != 0 {
			t.Errorf("EnsureRetry(R3, standalone JetStream) retried %d times; want 0", n)
		}
	})
	if testing.Short() {
		t.Skip("starts JetStream clusters")
	}
	t.Run("cluster of three", func(t *testing.T) {
		c := natstest.StartCluster(t, 3)
		_, js := c.JetStream()
		if got, err := ReplicasFor(t.Context(), js); err != nil || got != 3 {
			t.Fatalf("ReplicasFor(3 nodes) = %d, %v; want 3", got, err)
		}
		// A node down (a rolling restart) must not lower the count: that
		// would scale the streams down.
		c.Kill(0)
		c.WaitMetaLeader()
		var got int
		var err error
		deadline := time.Now().Add(ensureWait)
		for {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			got, err = ReplicasFor(ctx, js)
			cancel()
			if err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil || got != 3 {
			t.Fatalf("ReplicasFor(3 nodes, one down) = %d, %v; want 3", got, err)
		}
		// And the topology is created with those replicas, one node down.
		ctx, cancel := context.WithTimeout(t.Context(), ensureWait)
		defer cancel()
		if err := EnsureRetry(ctx, js, Topology{Replicas: got}, nil); err != nil {
			t.Fatalf("EnsureRetry(R%d, one node down) = %v", got, err)
		}
		s, err := js.Stream(ctx, wire.StreamSubmit)
		if err != nil {
			t.Fatalf("stream %s: %v", wire.StreamSubmit, err)
		}
		if r := s.CachedInfo().Config.Replicas; r != 3 {
			t.Errorf("stream %s has %d replicas; want 3", wire.StreamSubmit, r)
		}
	})
	t.Run("no majority", func(t *testing.T) {
		// With two of three nodes gone the last one may still answer as
		// meta leader for a while, the only JetStream server up: it must
		// not pass for a single server.
		c := natstest.StartCluster(t, 3)
		_, js := c.JetStream()
		c.Kill(1)
		c.Kill(2)
		for range 3 {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			got, err := ReplicasFor(ctx, js)
			cancel()
			if err == nil && got != 3 {
				t.Fatalf("ReplicasFor(3 nodes, two down) = %d, nil; want 3 or an error", got)
			}
		}
	})
	t.Run("two nodes", func(t *testing.T) {
		// R3 cannot be placed on two servers: EnsureRetry keeps trying
		// (the peers may yet come) and reports why.
		_, js := natstest.StartCluster(t, 2).JetStream()
		got, err := ReplicasFor(t.Context(), js)
		if err != nil || got != 3 {
			t.Fatalf("ReplicasFor(2 nodes) = %d, %v; want 3", got, err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		r := newRetryLog()
		err = EnsureRetry(ctx, js, Topology{Replicas: got}, r.onRetry)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("EnsureRetry(R3 on 2 nodes) = %v; want it to retry until its deadline", err)
		}
		if r.count() == 0 {
			t.Errorf("EnsureRetry(R3 on 2 nodes) did not report a retry")
		}
		t.Logf("EnsureRetry(R3 on 2 nodes) = %v", err)
	})
}

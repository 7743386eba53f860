package natstest_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/natstest"
)

// TestServerRestart checks that a single node keeps its store and port
// across Restart and that its clients reconnect.
func TestServerRestart(t *testing.T) {
	s := natstest.Start(t)
	nc, js := s.JetStream()
	ctx := t.Context()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}}); err != nil {
		t.Fatalf("CreateStream() = %v", err)
	}
	if _, err := js.Publish(ctx, "s.1", []byte("x")); err != nil {
		t.Fatalf("Publish() = %v", err)
	}
	url := s.URL()
	s.Restart()
	if got := s.URL(); got != url {
		t.Fatalf("URL() after Restart = %q; want %q", got, url)
	}
	natstest.WaitConnected(t, nc)
	// The client may not have noticed the restart yet when WaitConnected
	// looks (it then reports the old connection), so a first request can
	// be lost: ask until the restarted server answers.
	var (
		st      jetstream.Stream
		lastErr error
	)
	deadline := time.Now().Add(10 * time.Second)
	for st == nil {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		st, lastErr = js.Stream(rctx, "S")
		cancel()
		if st == nil && time.Now().After(deadline) {
			t.Fatalf("Stream() after Restart = %v", lastErr)
		}
	}
	if msgs := st.CachedInfo().State.Msgs; msgs != 1 {
		t.Fatalf("stream S holds %d messages after Restart; want 1", msgs)
	}
}

// TestServerRestartAfterShutdown: a server shut down (clients see it
// gone for as long as the test wants) comes back on its port with
// Restart.
func TestServerRestartAfterShutdown(t *testing.T) {
	s := natstest.Start(t)
	nc := s.Connect()
	url := s.URL()
	s.Shutdown()
	for deadline := time.Now().Add(10 * time.Second); nc.IsConnected(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the client still reports itself connected to a server shut down")
		}
	}
	s.Restart()
	if got := s.URL(); got != url {
		t.Fatalf("URL() after Shutdown and Restart = %q; want %q", got, url)
	}
	natstest.WaitConnected(t, nc)
}

package bus_test

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/pkg/wire"
)

// slowLink is a loopback TCP proxy to a NATS server that delivers the
// server's bytes to the client late by delay, in order: every publish ack
// arrives delay after the server sent it.
func slowLink(t *testing.T, server string, delay time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", server)
			if err != nil {
				c.Close()
				return
			}
			wg.Go(func() {
				_, _ = io.Copy(s, c)
				s.Close()
			})
			wg.Go(func() {
				defer c.Close()
				type chunk struct {
					at   time.Time
					data []byte
				}
				late := make(chan chunk, 1024)
				wg.Go(func() {
					for ch := range late {
						time.Sleep(time.Until(ch.at))
						if _, err := c.Write(ch.data); err != nil {
							return
						}
					}
				})
				defer close(late)
				buf := make([]byte, 32<<10)
				for {
					n, err := s.Read(buf)
					if n > 0 {
						late <- chunk{time.Now().Add(delay), append([]byte(nil), buf[:n]...)}
					}
					if err != nil {
						return
					}
				}
			})
		}
	})
	return "nats://" + ln.Addr().String()
}

// TestFullWindowWaitsForRoom: when the window of unacknowledged publishes
// is full and acks are slow to come back, a turn's chunks and events wait
// for room instead of failing: every record is stored and Flush reports
// nothing. (With nats.go's default stall wait, 200 ms, the second publish
// behind a 300 ms ack failed, and the turn lost its records.) The window
// is the connection's ack tracker's (bus.AckOptions.Window).
func TestFullWindowWaitsForRoom(t *testing.T) {
	srv := natstest.Start(t)
	_, direct := srv.JetStream()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := (bus.Topology{}).Ensure(ctx, direct); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(slowLink(t, srv.URL()[len("nats://"):], 300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bus.New(ctx, js, wire.Subjects{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.TrackAcks(bus.AckOptions{Window: 2}); err != nil {
		t.Fatal(err)
	}
	w := b.Turn("win", "t1", wire.JSON, nil)
	const n = 8
	for i := 1; i <= n; i++ {
		if err := w.Chunk(&wire.Chunk{SessionID: "win", TurnID: "t1", Step: 1, Attempt: 1, Seq: i, Delta: &wire.Delta{Text: "x"}}); err != nil {
			t.Fatalf("Chunk(%d) = %v", i, err)
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatalf("Flush() = %v; want every chunk stored", err)
	}
	s, err := direct.Stream(ctx, wire.StreamChunks)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.CachedInfo().State.Msgs; got != n {
		t.Errorf("TURN_CHUNKS holds %d chunks; want %d", got, n)
	}
}

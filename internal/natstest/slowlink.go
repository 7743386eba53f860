package natstest

import (
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// SlowLink is a loopback TCP proxy to the server at url that delivers the
// server's bytes to the client late by delay, in order (the client's bytes
// go through at once): every reply, ack and delivered message arrives delay
// after the server sent it, so each request a client waits for costs it one
// delay. It returns the proxy's URL and stops when the test ends, closing
// the connections still open.
func SlowLink(t testing.TB, url string, delay time.Duration) string {
	t.Helper()
	server := strings.TrimPrefix(url, "nats://")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
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
			mu.Lock()
			conns = append(conns, c, s)
			mu.Unlock()
			wg.Go(func() {
				_, _ = io.Copy(s, c)
				s.Close()
			})
			wg.Go(func() { relayLate(&wg, c, s, delay) })
		}
	})
	return "nats://" + ln.Addr().String()
}

// relayLate copies what the server s sends to the client c, each read
// delay after it arrived.
func relayLate(wg *sync.WaitGroup, c, s net.Conn, delay time.Duration) {
	defer c.Close()
	type chunk struct {
		at   time.Time
		data []byte
	}
	late := make(chan chunk, 1024)
	wg.Go(func() {
		failed := false
		for ch := range late { // drained to the end, so the reader never blocks
			if failed {
				continue
			}
			time.Sleep(time.Until(ch.at))
			if _, err := c.Write(ch.data); err != nil {
				failed = true
				s.Close() // the client is gone: end the reader
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
}

package natstest

import (
	"io"
	"net"
	"strings"
	"sync"
	"testing"
)

// Link is a loopback TCP proxy between NATS clients and a server, for
// fault tests: what the server sends can be held back (its clients then
// receive nothing: no publish acks, no replies, no pongs) and let through
// again, in order; and the connections through it can be cut (clients
// that reconnect come back through it). It is closed when the test ends.
type Link struct {
	ln     net.Listener
	server string

	mu     sync.Mutex
	cond   *sync.Cond
	held   bool
	closed bool
	pairs  map[*linkPair]struct{}
	wg     sync.WaitGroup
}

// linkPair is one client connection through the link and its server side.
type linkPair struct {
	client, server net.Conn
	cut            bool // guarded by Link.mu
}

// NewLink starts a link to the server at url (nats://host:port).
func NewLink(t testing.TB, url string) *Link {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("natstest: link: %v", err)
	}
	l := &Link{ln: ln, server: strings.TrimPrefix(url, "nats://"), pairs: map[*linkPair]struct{}{}}
	l.cond = sync.NewCond(&l.mu)
	l.wg.Go(l.accept)
	t.Cleanup(l.close)
	return l
}

// URL is the link's client URL.
func (l *Link) URL() string { return "nats://" + l.ln.Addr().String() }

// Hold holds back what the server sends until Release (or Cut).
func (l *Link) Hold() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held = true
}

// Release lets through what was held, in order, and what follows.
func (l *Link) Release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held = false
	l.cond.Broadcast()
}

// Cut closes every connection through the link: what was held is lost,
// as on a broken connection. Connections made after it pass freely.
func (l *Link) Cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for p := range l.pairs {
		l.cutLocked(p)
	}
	l.held = false
	l.cond.Broadcast()
}

func (l *Link) cutLocked(p *linkPair) {
	if p.cut {
		return
	}
	p.cut = true
	p.client.Close()
	p.server.Close()
	delete(l.pairs, p)
}

func (l *Link) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.ln.Close()
	l.Cut()
	l.wg.Wait()
}

func (l *Link) accept() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", l.server)
		if err != nil {
			c.Close()
			continue
		}
		p := &linkPair{client: c, server: s}
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			c.Close()
			s.Close()
			return
		}
		l.pairs[p] = struct{}{}
		l.mu.Unlock()
		l.wg.Go(func() {
			_, _ = io.Copy(s, c)
			l.drop(p)
		})
		l.wg.Go(func() {
			l.toClient(p)
			l.drop(p)
		})
	}
}

// toClient copies what the server sends to the client, waiting while the
// link holds it.
func (l *Link) toClient(p *linkPair) {
	buf := make([]byte, 32<<10)
	for {
		n, err := p.server.Read(buf)
		if n > 0 {
			l.mu.Lock()
			for l.held && !p.cut {
				l.cond.Wait()
			}
			cut := p.cut
			l.mu.Unlock()
			if cut {
				return
			}
			if _, werr := p.client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (l *Link) drop(p *linkPair) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cutLocked(p)
	l.cond.Broadcast()
}

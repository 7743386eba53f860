package embedded

import (
	"errors"
	"fmt"
	"net"
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
	// ServerName names the server. Default "turnstream".
	ServerName string
	// ReadyTimeout bounds the wait for the server to accept clients. Default 10s.
	ReadyTimeout time.Duration
}

// Start starts an in-process NATS server with JetStream enabled and
// waits until it accepts connections. The caller owns it: Shutdown, then
// WaitForShutdown.
func Start(o Options) (*server.Server, error) {
	if o.StoreDir == "" {
		return nil, errors.New("embedded: embedded server needs a store directory")
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
	host, portText, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return nil, fmt.Errorf("embedded: listen address %q: %w", o.Listen, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return nil, fmt.Errorf("embedded: listen port %q: %w", portText, err)
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
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded: embedded server: %w", err)
	}
	s.Start()
	if !s.ReadyForConnections(o.ReadyTimeout) {
		s.Shutdown()
		return nil, fmt.Errorf("embedded: embedded server not ready after %s", o.ReadyTimeout)
	}
	return s, nil
}

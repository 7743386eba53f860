package main

import (
	"fmt"
	"os"

	"github.com/nats-io/nats.go"
	"github.com/spf13/pflag"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/pkg/client"
)

// defaultNATSURL is where commands connect without --nats-url or NATS_URL.
const defaultNATSURL = "nats://127.0.0.1:4222"

const natsURLUsage = "NATS server URL (default $NATS_URL, else " + defaultNATSURL + ")"

// natsURLConfigUsage is --nats-url's usage for a command that reads a
// worker config.
const natsURLConfigUsage = "NATS server URL (default $NATS_URL, else config nats.url, else " + defaultNATSURL + ")"

// natsFlags are the connection flags of a command that connects to a NATS
// server. Every such command registers them with addNATSFlags and connects
// with connect.
type natsFlags struct {
	url, inboxPrefix string
}

// addNATSFlags registers --nats-url (described by urlUsage) and
// --inbox-prefix.
func addNATSFlags(f *pflag.FlagSet, urlUsage string) *natsFlags {
	n := &natsFlags{}
	f.StringVar(&n.url, "nats-url", "", urlUsage)
	f.StringVar(&n.inboxPrefix, "inbox-prefix", "", "prefix of this connection's reply subjects (default $NATS_INBOX_PREFIX, else _INBOX); "+
		"a deployment that shares an account between users gives each its own, such as _INBOX_<user>")
	return n
}

// URL is the server URL the flags name: --nats-url, else NATS_URL, else the
// default.
func (n *natsFlags) URL() string {
	if n.url != "" {
		return n.url
	}
	if v := os.Getenv("NATS_URL"); v != "" {
		return v
	}
	return defaultNATSURL
}

// URLWith is the server URL the flags name with a config: --nats-url, else
// NATS_URL, else the config's nats.url (cfg may be nil), else the default.
func (n *natsFlags) URLWith(cfg *config.Config) string {
	if n.url == "" && os.Getenv("NATS_URL") == "" && cfg != nil && cfg.NATS.URL != "" {
		return cfg.NATS.URL
	}
	return n.URL()
}

// InboxPrefix is --inbox-prefix, else NATS_INBOX_PREFIX, else "" (nats.go's
// default, _INBOX).
func (n *natsFlags) InboxPrefix() string {
	if n.inboxPrefix != "" {
		return n.inboxPrefix
	}
	return os.Getenv("NATS_INBOX_PREFIX")
}

// connect connects to url as name, with the inbox prefix of the flags (or
// NATS_INBOX_PREFIX) and the extra options. Every command that connects to
// NATS connects here. (nats.go reports asynchronous errors, such as a
// subscription the server's permissions refuse, on stderr.)
func (n *natsFlags) connect(url, name string, extra ...nats.Option) (*nats.Conn, error) {
	opts := []nats.Option{nats.Name(name)}
	if p := n.InboxPrefix(); p != "" {
		opts = append(opts, nats.CustomInboxPrefix(p))
	}
	nc, err := nats.Connect(url, append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS: %w", err)
	}
	return nc, nil
}

// client connects as name (to URL) and opens a pkg/client Client on the
// connection, with opts; closeConn closes the connection.
func (n *natsFlags) client(name string, opts ...client.Option) (c *client.Client, closeConn func(), err error) {
	nc, err := n.connect(n.URL(), name)
	if err != nil {
		return nil, nil, err
	}
	if c, err = client.New(nc, opts...); err != nil {
		nc.Close()
		return nil, nil, err
	}
	return c, nc.Close, nil
}

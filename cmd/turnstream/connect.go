package main

import (
	"fmt"
	"os"

	"github.com/nats-io/nats.go"

	"github.com/turnstream/turnstream/internal/config"
)

// defaultNATSURL is where commands connect without --nats-url or NATS_URL.
const defaultNATSURL = "nats://127.0.0.1:4222"

// natsURL returns the flag's value, else NATS_URL, else the default.
func natsURL(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	if v := os.Getenv("NATS_URL"); v != "" {
		return v
	}
	return defaultNATSURL
}

// inboxPrefix returns the flag's value, else NATS_INBOX_PREFIX, else ""
// (nats.go's default, _INBOX).
func inboxPrefix(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	return os.Getenv("NATS_INBOX_PREFIX")
}

// natsFlags are the connection flags of a command that connects to a NATS
// server.
type natsFlags struct {
	url, inboxPrefix *string
}

// natsFlags registers --nats-url (described by urlUsage) and
// --inbox-prefix.
func (f *flags) natsFlags(urlUsage string) natsFlags {
	return natsFlags{
		url: f.String("nats-url", "", urlUsage),
		inboxPrefix: f.String("inbox-prefix", "", "prefix of this connection's reply subjects (default $NATS_INBOX_PREFIX, else _INBOX); "+
			"a deployment that shares an account between users gives each its own, such as _INBOX_<user>"),
	}
}

const natsURLUsage = "NATS server URL (default $NATS_URL, else " + defaultNATSURL + ")"

// URL is the server URL the flags name: --nats-url, else NATS_URL, else the
// default.
func (n natsFlags) URL() string { return natsURL(*n.url) }

// URLWith is the server URL the flags name with a config: --nats-url, else
// NATS_URL, else the config's nats.url (cfg may be nil), else the default.
func (n natsFlags) URLWith(cfg *config.Config) string {
	if *n.url == "" && getenv("NATS_URL") == "" && cfg != nil && cfg.NATS.URL != "" {
		return cfg.NATS.URL
	}
	return n.URL()
}

// connect connects to url as name, with the inbox prefix of the flags (or
// NATS_INBOX_PREFIX) and the extra options. Every command that connects to
// NATS connects here. (nats.go reports asynchronous errors, such as a
// subscription the server's permissions refuse, on stderr.)
func (n natsFlags) connect(url, name string, extra ...nats.Option) (*nats.Conn, error) {
	opts := []nats.Option{nats.Name(name)}
	if p := inboxPrefix(*n.inboxPrefix); p != "" {
		opts = append(opts, nats.CustomInboxPrefix(p))
	}
	nc, err := nats.Connect(url, append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS: %w", err)
	}
	return nc, nil
}

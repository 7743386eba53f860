package deploy

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/turnstream/turnstream/internal/config"
)

// ownService reports whether subject is one the NATS service of user
// (nats.go/micro, internal/discovery) listens on: PING, INFO and STATS
// sent to every service, to its name and to one instance. No other
// subject starting with "$" may be subscribed to.
func ownService(user, subject string) bool {
	name := map[string]string{"worker": "turnstream-worker", "toolworker": "turnstream-tools"}[user]
	return name != "" && (subject == "$SRV.*" || subject == "$SRV.*."+name || subject == "$SRV.*."+name+".*")
}

// TestServerConfig loads nats-server.conf as the server does and checks the
// settings the deployment relies on.
func TestServerConfig(t *testing.T) {
	setPasswords(t)
	opts := loadConfig(t, serverConf)

	if !opts.JetStream {
		t.Error("JetStream is not enabled")
	}
	if opts.SystemAccount != "SYS" {
		t.Errorf("system account = %q; want SYS", opts.SystemAccount)
	}
	if opts.MaxPayload != 1<<20 {
		t.Errorf("max_payload = %d; want 1 MiB", opts.MaxPayload)
	}
	if opts.LameDuckDuration != 30*time.Second {
		t.Errorf("lame_duck_duration = %s; want 30s", opts.LameDuckDuration)
	}
	// Acknowledged writes must be on disk: the default fsyncs every 2
	// minutes (see "Durable writes" in README.md).
	if !opts.SyncAlways {
		t.Errorf("jetstream sync_interval = %s; want always", opts.SyncInterval)
	}
	users := map[string]string{}
	for _, u := range opts.Users {
		if u.Account == nil {
			t.Errorf("user %s has no account", u.Username)
			continue
		}
		users[u.Username] = u.Account.Name
		if u.Password == "" {
			t.Errorf("user %s has no password", u.Username)
		}
	}
	for _, r := range roles {
		if users[r.user] != r.account {
			t.Errorf("user %s is in account %q; want %q", r.user, users[r.user], r.account)
		}
	}
	if len(users) != len(roles) {
		t.Errorf("users = %v; want exactly %d", users, len(roles))
	}
	for _, u := range opts.Users {
		if u.Username != "sys" && u.Username != "operator" && u.Permissions == nil {
			t.Errorf("user %s has no permissions: it could publish anything", u.Username)
		}
		if u.Password != password(u.Username) {
			t.Errorf("user %s: password is not the one from its environment variable", u.Username)
		}
		// Replies only on the user's own inbox prefix: never another
		// user's, nor every inbox.
		if p := u.Permissions; p != nil && p.Subscribe != nil {
			for _, s := range p.Subscribe.Allow {
				if strings.HasPrefix(s, "_INBOX") && s != inbox(u.Username)+".>" {
					t.Errorf("user %s may subscribe to %q; want only its own inbox %s.>", u.Username, s, inbox(u.Username))
				}
				if s == ">" || strings.HasPrefix(s, "_R_") || strings.HasPrefix(s, "$") && !ownService(u.Username, s) {
					t.Errorf("user %s may subscribe to %q", u.Username, s)
				}
			}
		}
	}
	// The store is encrypted with the key from the environment.
	if opts.JetStreamCipher != server.ChaCha || opts.JetStreamKey != testKey {
		t.Errorf("jetstream cipher %v, key from env %v; want chachapoly with $%s", opts.JetStreamCipher, opts.JetStreamKey == testKey, keyEnv)
	}

	// Only TURNSTREAM has JetStream: the other accounts reach the streams
	// only through what they import.
	srv := startServer(t, opts)
	for _, r := range roles {
		acc, err := srv.LookupAccount(r.account)
		if err != nil {
			t.Fatalf("account %s: %v", r.account, err)
		}
		if got, want := acc.JetStreamEnabled(), r.account == "TURNSTREAM"; got != want {
			t.Errorf("account %s: JetStream enabled = %v; want %v", r.account, got, want)
		}
	}
}

// TestServerConfigNeedsPasswords checks that a missing password variable
// stops the server from loading its configuration instead of leaving a user
// without a password.
func TestServerConfigNeedsPasswords(t *testing.T) {
	for _, missing := range roles {
		t.Run(missing.user, func(t *testing.T) {
			setPasswords(t)
			t.Setenv(missing.env, "")
			// t.Setenv restores the variable afterwards; an empty value still
			// counts as set, so unset it for the parse.
			unsetenv(t, missing.env)
			if _, err := loadConfigErr(serverConf); err == nil {
				t.Errorf("ProcessConfigFile() without %s = nil error; want an error", missing.env)
			}
		})
	}
	t.Run("key", func(t *testing.T) {
		setPasswords(t)
		unsetenv(t, keyEnv)
		if _, err := loadConfigErr(serverConf); err == nil {
			t.Errorf("ProcessConfigFile() without %s = nil error; want an error", keyEnv)
		}
	})
}

// TestWorkerConfig loads the example worker config as `turnstream worker`
// does.
func TestWorkerConfig(t *testing.T) {
	cfg, err := config.Load("worker.yaml")
	if err != nil {
		t.Fatalf("config.Load(worker.yaml) = %v", err)
	}
	if cfg.NATS.Replicas != 3 {
		t.Errorf("nats.replicas = %d; want 3 (the 3-node cluster)", cfg.NATS.Replicas)
	}
	if cfg.NATS.URL != "" {
		t.Errorf("nats.url = %q; want none: the URL carries the worker's password and comes from NATS_URL", cfg.NATS.URL)
	}
	route, ok := cfg.Route("")
	if !ok || len(route.Targets) < 2 {
		t.Errorf("default route = %+v; want a primary and a fallback", route)
	}
	for _, p := range cfg.Providers {
		if p.APIKeyEnv == "" && p.APIKeyFile == "" {
			t.Errorf("provider %s names no key source", p.Name)
		}
	}
}

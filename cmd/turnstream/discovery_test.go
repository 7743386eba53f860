package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/natstest"
	buildversion "github.com/turnstream/turnstream/internal/version"
)

// serviceNames are the names of the NATS services answering $SRV.PING
// within a moment, sorted.
func serviceNames(t *testing.T, nc *nats.Conn) []string {
	t.Helper()
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe() //nolint:errcheck // the connection closes with the test
	if err := nc.PublishRequest("$SRV.PING", inbox, nil); err != nil {
		t.Fatal(err)
	}
	var names []string
	for {
		m, err := sub.NextMsg(300 * time.Millisecond)
		if err != nil {
			break
		}
		var p micro.Ping
		if err := json.Unmarshal(m.Data, &p); err != nil {
			t.Fatalf("PING answer %s: %v", m.Data, err)
		}
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}

// awaitServices waits until exactly want answer $SRV.PING.
func awaitServices(t *testing.T, nc *nats.Conn, want ...string) {
	t.Helper()
	var got []string
	for deadline := time.Now().Add(opsWait); !slices.Equal(got, want); {
		if time.Now().After(deadline) {
			t.Fatalf("$SRV.PING answered by %v; want %v", got, want)
		}
		got = serviceNames(t, nc)
	}
}

// TestWorkerAndToolsServices runs `turnstream worker` and `turnstream
// tools`: both answer $SRV.PING as their NATS services, with this binary's
// version, and the worker's config summary names its provider without its
// key or the credentials of its base URL. Stopped, neither answers.
func TestWorkerAndToolsServices(t *testing.T) {
	const secret = "sk-cmdS3CRET"
	srv := natstest.Start(t)
	hs := httptest.NewServer(mockllm.New(mockllm.Default(mockllm.DefaultOptions{})))
	t.Cleanup(hs.Close)
	t.Setenv("TURNSTREAM_TEST_KEY", secret)
	cfg := filepath.Join(t.TempDir(), "worker.yaml")
	yaml := `providers:
  - {name: mock, api: openai_chat_completions, base_url: "` + hs.URL + `/v1", api_key_env: TURNSTREAM_TEST_KEY}
  - {name: spare, api: openai_responses, base_url: "https://u:` + secret + `@llm.example.com/v1?token=` + secret + `", api_key_env: TURNSTREAM_TEST_KEY}
models:
  - {provider: mock, name: mock-1}
  - {provider: spare, name: m2}
routes:
  - {name: default, targets: [{provider: mock, model: mock-1}, {provider: spare, model: m2}]}
worker: {drain_timeout: 5s}
`
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	worker := startMain(t, "worker", "--config", cfg, "--nats-url", srv.URL(), "--log-level", "warn")
	tools := startMain(t, "tools", "--nats-url", srv.URL(), "--log-level", "warn")
	op := srv.Connect()
	awaitServices(t, op, "turnstream-tools", "turnstream-worker")

	for _, name := range []string{"turnstream-worker", "turnstream-tools"} {
		m, err := op.Request("$SRV.INFO."+name, nil, opsWait)
		if err != nil {
			t.Fatalf("INFO %s: %v", name, err)
		}
		var info micro.Info
		if err := json.Unmarshal(m.Data, &info); err != nil {
			t.Fatal(err)
		}
		if want := buildversion.Semver(versionString()); info.Version != want {
			t.Errorf("%s version = %q; want %q (this binary's)", name, info.Version, want)
		}
	}
	m, err := op.Request("turn.svc.worker.config", nil, opsWait)
	if err != nil {
		t.Fatalf("worker config: %v", err)
	}
	got := string(m.Data)
	for _, want := range []string{`"name":"mock"`, `"name":"spare"`, `"base_url":"https://llm.example.com/v1"`, `"api_key":"env"`} {
		if !strings.Contains(got, want) {
			t.Errorf("worker config = %s; want %s in it", got, want)
		}
	}
	if strings.Contains(got, secret) {
		t.Errorf("worker config = %s; holds the secret", got)
	}
	m, err = op.Request("turn.svc.tools.config", nil, opsWait)
	if err != nil || !strings.Contains(string(m.Data), `"name":"calculate"`) {
		t.Errorf("tools config = %v; want the demo tools (%v)", m, err)
	}

	tools.stop(t)
	worker.stop(t)
	awaitServices(t, op)
}

// TestDevServices runs `turnstream dev`: its worker and demo tools answer
// $SRV.PING as their NATS services.
func TestDevServices(t *testing.T) {
	natsAddr := fmt.Sprintf("127.0.0.1:%d", natstest.FreePort(t))
	ctx, cancel := context.WithTimeout(t.Context(), 2*opsWait)
	defer cancel()
	var out lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- dispatch(ctx, []string{"dev", "--listen", natsAddr, "--latency", "0s", "--log-level", "warn"}, &out)
	}()
	var nc *nats.Conn
	for deadline := time.Now().Add(opsWait); nc == nil; time.Sleep(50 * time.Millisecond) {
		c, err := nats.Connect("nats://" + natsAddr)
		if err == nil {
			nc = c
		} else if time.Now().After(deadline) {
			t.Fatalf("dev's server never listened: %v\n%s", err, out.String())
		}
	}
	defer nc.Close()
	awaitServices(t, nc, "turnstream-tools", "turnstream-worker")
	cancel()
	if err := <-done; err != nil {
		t.Errorf("dev: %v\n%s", err, out.String())
	}
}

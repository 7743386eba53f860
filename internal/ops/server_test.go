package ops_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/ops"
)

func get(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u) //nolint:noctx // a loopback test server
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestServerPaths: /metrics serves the gatherer, /healthz answers 200,
// /readyz answers as Ready says, with its reason, each time it is asked.
func TestServerPaths(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "turnstream_test_total", Help: "A test counter."})
	reg.MustRegister(c)
	c.Add(3)
	var why atomic.Pointer[error]
	srv, err := ops.Start(ops.Options{Addr: "127.0.0.1:0", Gatherer: reg, Log: zerolog.New(zerolog.NewTestWriter(t)),
		Ready: func() error {
			if e := why.Load(); e != nil {
				return *e
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	base := "http://" + srv.Addr()

	if code, body := get(t, base+ops.PathMetrics); code != http.StatusOK || !strings.Contains(body, "turnstream_test_total 3") {
		t.Errorf("GET /metrics = %d\n%s\nwant 200 with turnstream_test_total 3", code, body)
	}
	if code, body := get(t, base+ops.PathHealth); code != http.StatusOK || body != "ok\n" {
		t.Errorf("GET /healthz = %d %q; want 200 ok", code, body)
	}
	if code, body := get(t, base+ops.PathReady); code != http.StatusOK || body != "ready\n" {
		t.Errorf("GET /readyz = %d %q; want 200 ready", code, body)
	}
	notReady := errors.New("nats: reconnecting")
	why.Store(&notReady)
	if code, body := get(t, base+ops.PathReady); code != http.StatusServiceUnavailable || body != "not ready: nats: reconnecting\n" {
		t.Errorf("GET /readyz = %d %q; want 503 naming the reason", code, body)
	}
	if code, _ := get(t, base+ops.PathHealth); code != http.StatusOK {
		t.Errorf("GET /healthz while not ready = %d; want 200 (alive)", code)
	}
	why.Store(nil)
	if code, _ := get(t, base+ops.PathReady); code != http.StatusOK {
		t.Errorf("GET /readyz once ready again = %d; want 200", code)
	}
	if code, _ := get(t, base+"/nope"); code != http.StatusNotFound {
		t.Errorf("GET /nope = %d; want 404", code)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("second Close() = %v; want nil (idempotent)", err)
	}
}

func TestStartRejects(t *testing.T) {
	reg := prometheus.NewRegistry()
	for _, tt := range []struct {
		name string
		o    ops.Options
	}{
		{"no address", ops.Options{Gatherer: reg}},
		{"no gatherer", ops.Options{Addr: "127.0.0.1:0"}},
		{"bad address", ops.Options{Addr: "127.0.0.1:http-nope", Gatherer: reg}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if srv, err := ops.Start(tt.o); err == nil {
				srv.Close()
				t.Errorf("Start(%+v) = nil error; want one", tt.o)
			}
		})
	}
}

package deploy

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/turnstream/turnstream/internal/config"
)

// process is a turnstream process a test started.
type process struct {
	cmd    *exec.Cmd
	out    *lockedBuffer
	exited chan struct{}
	err    error // of Wait, once exited is closed
}

// startTurnstream runs the binary with args and extra environment until
// it exits or the test ends.
func startTurnstream(t *testing.T, bin string, args []string, env ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin, args...), out: &lockedBuffer{}, exited: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// waitHealthy runs the health check (the binary's arguments) until it
// passes, failing if p exits first.
func waitHealthy(t *testing.T, bin string, p *process, check []string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		out, err := exec.Command(bin, check...).CombinedOutput()
		if err == nil {
			return
		}
		select {
		case <-p.exited:
			t.Fatalf("turnstream %s exited (%v) before `turnstream %s` passed:\n%s",
				strings.Join(p.cmd.Args[1:], " "), p.err, strings.Join(check, " "), p.out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("`turnstream %s` still fails after %s: %v\n%s\nprocess output:\n%s", strings.Join(check, " "), wait, err, out, p.out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stop sends SIGTERM and expects a clean exit within d.
func (p *process) stop(t *testing.T, d time.Duration) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
		if p.err != nil {
			t.Errorf("turnstream %s after SIGTERM: %v\n%s", p.cmd.Args[1], p.err, p.out)
		}
	case <-time.After(d):
		t.Errorf("turnstream %s did not exit within %s of SIGTERM\n%s", p.cmd.Args[1], d, p.out)
	}
}

// retarget returns a compose health check (the binary's arguments) with
// its URL moved from the container's loopback port to addr.
func retarget(t *testing.T, check []string, addr string) []string {
	t.Helper()
	out := slices.Clone(check)
	u, err := url.Parse(out[len(out)-1])
	if err != nil {
		t.Fatal(err)
	}
	u.Host = addr
	out[len(out)-1] = u.String()
	return out
}

// get returns the status and body of GET u.
func get(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u) //nolint:noctx // a loopback test server
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestHealthchecks runs the compose stack's turnstream services as
// processes, each with its command from compose.yaml (addresses moved to
// loopback ports), against a server from nats-server.conf, as the users
// compose gives them, and runs each service's health check command until
// it passes. Workers and tool workers must then answer /healthz and
// serve turnstream_ metrics on --metrics-addr, and exit cleanly on
// SIGTERM within the drain timeout.
func TestHealthchecks(t *testing.T) {
	setComposeEnv(t)
	bin := turnstreamCLI(t).path
	p, err := loadCompose(t, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	svcs := map[string]composeService{}
	for _, s := range p.Services {
		if s.Build != nil && len(s.Command) > 0 {
			svcs[s.Command[0]] = s
		}
	}
	ports := freePorts(t, 3)
	addr := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", ports[i]) }

	mock := svcs["mockllm"]
	mp := startTurnstream(t, bin, withFlag(mock.Command, "addr", addr(0)))
	waitHealthy(t, bin, mp, retarget(t, mock.Healthcheck.Test[2:], addr(0)))

	srv := startServer(t, loadConfig(t, serverConf))
	worker := svcs["worker"]
	cfgFile := workerConfigFor(t, worker, "http://"+addr(0)+"/v1")
	cfg, err := config.Load(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	var running []*process
	for i, name := range []string{"worker", "tools"} {
		svc := svcs[name]
		args := withFlag(svc.Command, metricsServer.flag, addr(i+1))
		if name == "worker" {
			args = withFlag(args, "config", cfgFile)
		}
		user := roleUser[name]
		u := fmt.Sprintf("nats://%s:%s@%s", user, password(user), strings.TrimPrefix(srv.ClientURL(), "nats://"))
		proc := startTurnstream(t, bin, args, "NATS_URL="+u, "NATS_INBOX_PREFIX="+svc.Environment["NATS_INBOX_PREFIX"])
		waitHealthy(t, bin, proc, retarget(t, svc.Healthcheck.Test[2:], addr(i+1)))
		if code, _ := get(t, "http://"+addr(i+1)+metricsServer.health); code != http.StatusOK {
			t.Errorf("%s: GET %s = %d; want 200", name, metricsServer.health, code)
		}
		if code, body := get(t, "http://"+addr(i+1)+metricsServer.metrics); code != http.StatusOK || !strings.Contains(body, "turnstream_") {
			t.Errorf("%s: GET %s = %d with no turnstream_ metric; want 200 and the metrics", name, metricsServer.metrics, code)
		}
		running = append(running, proc)
	}
	for _, proc := range slices.Backward(running) {
		proc.stop(t, time.Duration(cfg.Worker.DrainTimeout)+10*time.Second)
	}
	mp.stop(t, 10*time.Second)
}

// workerConfigFor writes the compose workers' config for one local server:
// one replica per stream, and the provider at base.
func workerConfigFor(t *testing.T, worker composeService, base string) string {
	t.Helper()
	path, _ := flagValue(worker.Command, "config")
	host, ok := worker.hostPath(t, path)
	if !ok {
		t.Fatalf("--config %s is not mounted", path)
	}
	var cfg map[string]any
	readYAML(t, host, &cfg)
	cfg["nats"].(map[string]any)["replicas"] = 1
	for _, p := range cfg["providers"].([]any) {
		p.(map[string]any)["base_url"] = base
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "worker.yaml")
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

package deploy

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"go.yaml.in/yaml/v3"

	"github.com/turnstream/turnstream/internal/config"
)

// composeFile is the compose stack under test.
const composeFile = "compose/compose.yaml"

// composeProject is the part of the compose file format the stack uses.
type composeProject struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Image string `yaml:"image"`
	Build *struct {
		Context    string `yaml:"context"`
		Dockerfile string `yaml:"dockerfile"`
	} `yaml:"build"`
	Command         []string          `yaml:"command"`
	Environment     map[string]string `yaml:"environment"`
	Volumes         []string          `yaml:"volumes"`
	User            string            `yaml:"user"`
	ReadOnly        bool              `yaml:"read_only"`
	CapDrop         []string          `yaml:"cap_drop"`
	SecurityOpt     []string          `yaml:"security_opt"`
	StopSignal      string            `yaml:"stop_signal"`
	StopGracePeriod string            `yaml:"stop_grace_period"`
	Deploy          struct {
		Replicas *int `yaml:"replicas"`
	} `yaml:"deploy"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	DependsOn map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
}

// replicas is the number of containers compose runs for the service.
func (s composeService) replicas() int {
	if s.Deploy.Replicas == nil {
		return 1
	}
	return *s.Deploy.Replicas
}

// mounts splits the service's volumes into bind mounts (host path, made
// absolute, by container path) and named volumes (by container path).
func (s composeService) mounts(t *testing.T) (binds, named map[string]string) {
	t.Helper()
	binds, named = map[string]string{}, map[string]string{}
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) < 2 {
			t.Errorf("volume %q: want SOURCE:TARGET[:MODE]", v)
			continue
		}
		src, dst := parts[0], parts[1]
		if strings.HasPrefix(src, ".") || strings.HasPrefix(src, "/") {
			abs, err := filepath.Abs(filepath.Join(filepath.Dir(composeFile), src))
			if err != nil {
				t.Fatal(err)
			}
			binds[dst] = abs
		} else {
			named[dst] = src
		}
	}
	return binds, named
}

// hostPath returns the file on this machine that the service's bind
// mounts put at path in its container.
func (s composeService) hostPath(t *testing.T, path string) (string, bool) {
	t.Helper()
	binds, _ := s.mounts(t)
	for dst, src := range binds {
		if rest, ok := strings.CutPrefix(path, dst); ok && (rest == "" || strings.HasPrefix(rest, "/")) {
			return filepath.Join(src, rest), true
		}
	}
	return "", false
}

// containerRoot lays the service's bind mounts out under a test directory
// as its container sees them, so that relative includes resolve as there.
func (s composeService) containerRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	binds, _ := s.mounts(t)
	for dst, src := range binds {
		at := filepath.Join(root, dst)
		if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(src, at); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

var composeVar = regexp.MustCompile(`\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// interpolate expands variables as compose does: $VAR, ${VAR},
// ${VAR:-default}, ${VAR-default}, ${VAR:?error}, ${VAR?error} and $$.
func interpolate(s string, lookup func(string) (string, bool)) (string, error) {
	var errs []error
	out := composeVar.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$$" {
			return "$"
		}
		sm := composeVar.FindStringSubmatch(m)
		name, op, arg := sm[1]+sm[4], sm[2], sm[3]
		v, ok := lookup(name)
		set := ok && (v != "" || !strings.HasPrefix(op, ":"))
		switch strings.TrimPrefix(op, ":") {
		case "-":
			if !set {
				return arg
			}
		case "?":
			if !set {
				errs = append(errs, fmt.Errorf("%s: %s", name, arg))
			}
		}
		return v
	})
	return out, errors.Join(errs...)
}

// loadCompose reads the compose file with the variables of lookup, as
// `docker compose config` would.
func loadCompose(t *testing.T, lookup func(string) (string, bool)) (composeProject, error) {
	t.Helper()
	raw, err := os.ReadFile(composeFile)
	if err != nil {
		t.Fatal(err)
	}
	text, err := interpolate(string(raw), lookup)
	if err != nil {
		return composeProject{}, err
	}
	var p composeProject
	if err := yaml.Unmarshal([]byte(text), &p); err != nil {
		t.Fatalf("%s: %v", composeFile, err)
	}
	return p, nil
}

// setComposeEnv sets every variable compose.yaml requires, as .env would.
func setComposeEnv(t *testing.T) {
	t.Helper()
	setPasswords(t)
	t.Setenv("TURNSTREAM_ROUTE_PASSWORD", "proute5b1d")
}

// secretVar names a variable that holds a password or a key.
var secretVar = regexp.MustCompile(`PASSWORD|_KEY$|^NATS_URL$`)

// TestComposeHoldsNoSecrets checks that every password, key and NATS URL
// of the stack comes from the environment (.env), and that compose refuses
// to start without them.
func TestComposeHoldsNoSecrets(t *testing.T) {
	p, err := loadCompose(t, func(name string) (string, bool) { return "${" + name + "}", true })
	if err != nil {
		t.Fatal(err)
	}
	for name, svc := range p.Services {
		for k, v := range svc.Environment {
			if secretVar.MatchString(k) && !strings.Contains(v, "${") {
				t.Errorf("service %s: %s is written in %s; want it from a variable", name, k, composeFile)
			}
		}
	}
	_, err = loadCompose(t, func(string) (string, bool) { return "", false })
	for _, r := range roles {
		if err == nil || !strings.Contains(err.Error(), r.env) {
			t.Errorf("compose without %s = %v; want an error naming it", r.env, err)
		}
	}
}

// TestCompose checks the compose stack offline: each NATS node loads its
// configuration as nats-server would in its container and joins the
// other two; every turnstream command line and health check names
// commands and flags the binary has; the workers' config loads, points at
// the mock provider and the 3 nodes, and drains within the stop grace
// period; components connect as their own users.
func TestCompose(t *testing.T) {
	setComposeEnv(t)
	p, err := loadCompose(t, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	var natsNodes, turnstreamSvcs []string
	for name, svc := range p.Services {
		switch {
		case strings.HasPrefix(svc.Image, "nats:"):
			natsNodes = append(natsNodes, name)
		case svc.Build != nil:
			turnstreamSvcs = append(turnstreamSvcs, name)
		default:
			t.Errorf("service %s: image %q is neither NATS nor built from the Dockerfile", name, svc.Image)
		}
	}
	slices.Sort(natsNodes)
	if len(natsNodes) != 3 {
		t.Fatalf("NATS services %v; want 3", natsNodes)
	}

	clientPort := 0
	for _, name := range natsNodes {
		t.Run(name, func(t *testing.T) {
			opts := composeNATS(t, p, name, natsNodes)
			if clientPort != 0 && opts.Port != clientPort {
				t.Errorf("client port %d; the other nodes listen on %d", opts.Port, clientPort)
			}
			clientPort = opts.Port
		})
	}

	cli := turnstreamCLI(t)
	entry := dockerEntrypoint(t)
	byCommand := map[string]string{}
	for _, name := range turnstreamSvcs {
		svc := p.Services[name]
		if len(svc.Command) > 0 {
			byCommand[svc.Command[0]] = name
		}
	}
	for _, want := range []string{"worker", "tools", "mockllm"} {
		if byCommand[want] == "" {
			t.Errorf("no service runs `turnstream %s`", want)
		}
	}
	for _, name := range turnstreamSvcs {
		t.Run(name, func(t *testing.T) {
			svc := p.Services[name]
			composeTurnstream(t, cli, entry, p, svc)
			cmd := svc.Command[0]
			if user, ok := roleUser[cmd]; ok {
				composeConnects(t, svc, user, natsNodes, clientPort)
			}
			if cmd == "worker" {
				if svc.replicas() != 2 {
					t.Errorf("workers: %d replicas; want 2", svc.replicas())
				}
				composeWorkerConfig(t, p, svc, byCommand["mockllm"], len(natsNodes))
			}
		})
	}
}

// composeNATS loads the configuration of NATS service name from its
// container's view of the files and checks its cluster settings.
func composeNATS(t *testing.T, p composeProject, name string, nodes []string) *server.Options {
	svc := p.Services[name]
	for k, v := range svc.Environment {
		t.Setenv(k, v)
	}
	c, ok := flagValue(svc.Command, "c")
	if !ok {
		t.Fatalf("command %q: no -c CONFIG", svc.Command)
	}
	opts, err := server.ProcessConfigFile(filepath.Join(svc.containerRoot(t), c))
	if err != nil {
		t.Fatalf("nats-server -c %s: %v", c, err)
	}
	if opts.ServerName != name {
		t.Errorf("server_name = %q; want the service name %q", opts.ServerName, name)
	}
	if !opts.JetStream {
		t.Error("JetStream is off")
	}
	if opts.Cluster.Name != "turnstream" || opts.Cluster.Port == 0 {
		t.Errorf("cluster %q on port %d; want turnstream", opts.Cluster.Name, opts.Cluster.Port)
	}
	var hosts []string
	for _, r := range opts.Routes {
		hosts = append(hosts, r.Hostname())
		pw, _ := r.User.Password()
		if r.Port() != strconv.Itoa(opts.Cluster.Port) || r.User.Username() != opts.Cluster.Username || pw != opts.Cluster.Password {
			t.Errorf("route %s: want port %d and the cluster's route credentials", r.Redacted(), opts.Cluster.Port)
		}
	}
	slices.Sort(hosts)
	if !slices.Equal(hosts, nodes) {
		t.Errorf("routes to %v; want the NATS services %v", hosts, nodes)
	}
	_, named := svc.mounts(t)
	onVolume := false
	for dst, vol := range named {
		if _, declared := p.Volumes[vol]; !declared {
			t.Errorf("volume %s is not declared under volumes:", vol)
		}
		onVolume = onVolume || strings.HasPrefix(opts.StoreDir, dst+"/")
	}
	if !onVolume {
		t.Errorf("store_dir %s is not on a named volume (%v)", opts.StoreDir, named)
	}
	if hc := svc.Healthcheck; hc == nil || !slices.Contains(hc.Test, fmt.Sprintf("http://%s:%d/healthz", opts.HTTPHost, opts.HTTPPort)) {
		t.Errorf("health check %v; want a GET of the monitoring port's /healthz (%s:%d)", svc.Healthcheck, opts.HTTPHost, opts.HTTPPort)
	}
	if grace := composeDuration(t, svc.StopGracePeriod); svc.StopSignal != "SIGUSR2" || grace <= opts.LameDuckDuration {
		t.Errorf("stop_signal %q, stop_grace_period %s; want SIGUSR2 (lame duck mode) and longer than lame_duck_duration %s", svc.StopSignal, grace, opts.LameDuckDuration)
	}
	return opts
}

// composeTurnstream checks a service of the turnstream image: built from
// the Dockerfile, locked down, its command and health check the binary's.
func composeTurnstream(t *testing.T, cli *cli, entry string, p composeProject, svc composeService) {
	t.Helper()
	if ctx := filepath.Join(filepath.Dir(composeFile), svc.Build.Context, svc.Build.Dockerfile); filepath.Clean(ctx) != filepath.Clean(dockerfile) {
		t.Errorf("build %s; want the Dockerfile at the repository root", ctx)
	}
	if !svc.ReadOnly || !slices.Contains(svc.CapDrop, "ALL") || !slices.Contains(svc.SecurityOpt, "no-new-privileges:true") {
		t.Errorf("read_only %v, cap_drop %v, security_opt %v; want true, [ALL], [no-new-privileges:true]", svc.ReadOnly, svc.CapDrop, svc.SecurityOpt)
	}
	if u, _, _ := strings.Cut(svc.User, ":"); u == "0" || u == "root" {
		t.Errorf("user %q: runs as root", svc.User)
	}
	cli.check(t, "command", svc.Command)
	hc := svc.Healthcheck
	if hc == nil || len(hc.Test) < 4 || hc.Test[0] != "CMD" || hc.Test[1] != entry {
		t.Fatalf("health check %v; want [CMD %s probe URL] (the image has no shell)", hc, entry)
	}
	cli.check(t, "health check", hc.Test[2:])
	u, err := url.Parse(hc.Test[len(hc.Test)-1])
	if err != nil {
		t.Fatal(err)
	}
	cmd := svc.Command[0]
	wantPort, wantPath := 0, ""
	switch cmd {
	case "worker", "tools":
		wantPort, wantPath = metricsPort(t, "command", svc.Command), metricsServer.ready
	case "mockllm":
		wantPort, wantPath = addrPort(t, "command", svc.Command, "addr"), "/v1/models"
	}
	if u.Hostname() != "127.0.0.1" || u.Port() != strconv.Itoa(wantPort) || u.Path != wantPath {
		t.Errorf("health check GETs %s; want http://127.0.0.1:%d%s", u, wantPort, wantPath)
	}
	for dep, d := range svc.DependsOn {
		if p.Services[dep].Healthcheck != nil && d.Condition != "service_healthy" {
			t.Errorf("depends_on %s: condition %q; want service_healthy", dep, d.Condition)
		}
	}
}

// composeConnects checks that a component connects to every NATS node as
// its own user, with that user's password and inbox prefix.
func composeConnects(t *testing.T, svc composeService, user string, nodes []string, port int) {
	t.Helper()
	var hosts []string
	for _, s := range strings.Split(svc.Environment["NATS_URL"], ",") {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatalf("NATS_URL: %v", err)
		}
		pw, _ := u.User.Password()
		if u.User.Username() != user || pw != password(user) || u.Port() != strconv.Itoa(port) {
			t.Errorf("NATS_URL %s; want user %s with its password, port %d", u.Redacted(), user, port)
		}
		hosts = append(hosts, u.Hostname())
	}
	slices.Sort(hosts)
	if !slices.Equal(hosts, nodes) {
		t.Errorf("NATS_URL lists %v; want every node %v", hosts, nodes)
	}
	if got := svc.Environment["NATS_INBOX_PREFIX"]; got != inbox(user) {
		t.Errorf("NATS_INBOX_PREFIX = %q; want %q", got, inbox(user))
	}
	for _, n := range nodes {
		if _, ok := svc.DependsOn[n]; !ok {
			t.Errorf("does not depend on %s", n)
		}
	}
}

// composeWorkerConfig loads the workers' config as they do and checks it
// against the stack.
func composeWorkerConfig(t *testing.T, p composeProject, svc composeService, mock string, nodes int) {
	t.Helper()
	path, _ := flagValue(svc.Command, "config")
	host, ok := svc.hostPath(t, path)
	if !ok {
		t.Fatalf("--config %s is not mounted", path)
	}
	cfg, err := config.Load(host)
	if err != nil {
		t.Fatal(err)
	}
	if grace, drain := composeDuration(t, svc.StopGracePeriod), time.Duration(cfg.Worker.DrainTimeout); grace <= drain {
		t.Errorf("stop_grace_period %s; want longer than worker.drain_timeout %s", grace, drain)
	}
	if cfg.NATS.Replicas != nodes {
		t.Errorf("nats.replicas = %d; want %d, one per node", cfg.NATS.Replicas, nodes)
	}
	mockPort := addrPort(t, "mockllm", p.Services[mock].Command, "addr")
	for _, pr := range cfg.Providers {
		u, err := url.Parse(pr.BaseURL)
		if err != nil {
			t.Fatal(err)
		}
		if u.Hostname() != mock || u.Port() != strconv.Itoa(mockPort) {
			t.Errorf("provider %s: base_url %s; want the mock provider, http://%s:%d/v1", pr.Name, pr.BaseURL, mock, mockPort)
		}
		if pr.APIKeyEnv != "" && svc.Environment[pr.APIKeyEnv] == "" {
			t.Errorf("provider %s: api_key_env %s is not in the worker's environment", pr.Name, pr.APIKeyEnv)
		}
	}
	if d, ok := svc.DependsOn[mock]; !ok || d.Condition != "service_healthy" {
		t.Errorf("workers do not wait for a healthy %s", mock)
	}
}

func composeDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	if s == "" {
		return 10 * time.Second // compose's default
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Errorf("duration %q: %v", s, err)
	}
	return d
}

package deploy

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"
)

// metricsServer is the contract of the metrics server of issue 13 (part 1)
// that the packaging relies on: `worker`, `tools` and `dev` take
// --metrics-addr and serve Prometheus metrics, liveness and readiness on
// that address. The Dockerfile, compose/compose.yaml and the Helm chart are
// checked against it and against the flags the binary reports, so that a
// manifest cannot name a flag, port or path the binary does not have.
var metricsServer = struct {
	flag                   string
	metrics, health, ready string
	port                   int
}{flag: "metrics-addr", metrics: "/metrics", health: "/healthz", ready: "/readyz", port: 9090}

// roleUser is the deploy/nats user each long-running component connects as.
var roleUser = map[string]string{"worker": "worker", "tools": "toolworker"}

// binDir holds the binary the packaging tests build; TestMain removes it.
var binDir string

// cli is what the built binary says about itself: its commands and each
// command's flags, read from `turnstream help` and `turnstream <cmd> -h`.
type cli struct {
	path  string
	flags map[string]map[string]bool
}

var (
	commandLine = regexp.MustCompile(`(?m)^  ([a-z][a-z0-9-]*) +\S`)
	// Go's flag package prints "  -name type", pflag "  -n, --name type".
	flagLine = regexp.MustCompile(`(?m)^\s+(?:-[A-Za-z0-9], )?--?([a-z][a-z0-9-]*)`)
)

// builtCLI builds ./cmd/turnstream once and reads its commands and flags.
// It builds with the default flags, not the Dockerfile's, so that the
// packages `go build ./...` compiled are reused and only linking is left.
var builtCLI = sync.OnceValues(func() (*cli, error) {
	dir, err := os.MkdirTemp("", "turnstream-deploy-")
	if err != nil {
		return nil, err
	}
	binDir = dir
	c := &cli{path: filepath.Join(dir, "turnstream"), flags: map[string]map[string]bool{}}
	if out, err := exec.Command("go", "build", "-o", c.path, "../cmd/turnstream").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build ./cmd/turnstream: %v\n%s", err, out)
	}
	help, err := exec.Command(c.path, "help").Output()
	if err != nil {
		return nil, fmt.Errorf("turnstream help: %v", err)
	}
	// The commands are listed under "Available Commands:" (cobra), up to
	// the next blank line.
	list := string(help)
	if i := strings.Index(list, "Available Commands:"); i >= 0 {
		list = list[i:]
		if j := strings.Index(list, "\n\n"); j >= 0 {
			list = list[:j]
		}
	}
	for _, m := range commandLine.FindAllStringSubmatch(list, -1) {
		out, err := exec.Command(c.path, m[1], "-h").CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("turnstream %s -h: %v\n%s", m[1], err, out)
		}
		flags := map[string]bool{"h": true, "help": true}
		for _, f := range flagLine.FindAllStringSubmatch(string(out), -1) {
			flags[f[1]] = true
		}
		c.flags[m[1]] = flags
	}
	if len(c.flags) == 0 {
		return nil, fmt.Errorf("turnstream help lists no commands:\n%s", help)
	}
	return c, nil
})

// turnstreamCLI returns the built binary and what it accepts.
func turnstreamCLI(t *testing.T) *cli {
	t.Helper()
	c, err := builtCLI()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// check reports, as from where, a command line (without the binary) that
// names a command or a flag the binary does not have.
func (c *cli) check(t *testing.T, where string, args []string) {
	t.Helper()
	if len(args) == 0 {
		t.Errorf("%s: no turnstream command", where)
		return
	}
	flags, ok := c.flags[args[0]]
	if !ok {
		t.Errorf("%s: turnstream has no command %q (it has %s)", where, args[0], strings.Join(slices.Sorted(maps.Keys(c.flags)), ", "))
		return
	}
	for _, a := range args[1:] {
		if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !flags[name] {
			t.Errorf("%s: `turnstream %s` has no flag --%s (see `turnstream %s -h`)", where, args[0], name, args[0])
		}
	}
}

// flagValue returns the value of --name (or -name) in args, given as
// "--name value" or "--name=value".
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		n, v, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || n != name {
			continue
		}
		if hasValue {
			return v, true
		}
		if i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

// withFlag returns args with the value of --name replaced by value.
func withFlag(args []string, name, value string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		n, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || n != name {
			continue
		}
		if hasValue {
			out[i] = "--" + name + "=" + value
		} else if i+1 < len(out) {
			out[i+1] = value
		}
	}
	return out
}

// addrPort returns the port of the listen address --name gives in args.
func addrPort(t *testing.T, where string, args []string, name string) int {
	t.Helper()
	v, ok := flagValue(args, name)
	if !ok {
		t.Errorf("%s: `turnstream %s` is not given --%s", where, strings.Join(args, " "), name)
		return 0
	}
	_, p, err := net.SplitHostPort(v)
	if err != nil {
		t.Errorf("%s: --%s %q: %v", where, name, v, err)
		return 0
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Errorf("%s: --%s %q: port is not a number", where, name, v)
	}
	return port
}

// metricsPort returns the port a worker's or tool worker's command line
// gives --metrics-addr, which must be the manifests' default.
func metricsPort(t *testing.T, where string, args []string) int {
	t.Helper()
	port := addrPort(t, where, args, metricsServer.flag)
	if port != 0 && port != metricsServer.port {
		t.Errorf("%s: --%s port = %d; want %d, the port the manifests document", where, metricsServer.flag, port, metricsServer.port)
	}
	return port
}

// TestMetricsFlags checks that the commands the manifests run with a
// metrics server have --metrics-addr (issue 13, part 1).
func TestMetricsFlags(t *testing.T) {
	c := turnstreamCLI(t)
	for _, cmd := range []string{"worker", "tools", "dev"} {
		if !c.flags[cmd][metricsServer.flag] {
			t.Errorf("`turnstream %s -h` lists no --%s; the Helm chart and compose.yaml serve %s, %s and %s on it",
				cmd, metricsServer.flag, metricsServer.metrics, metricsServer.health, metricsServer.ready)
		}
	}
}

// TestYAMLParses parses every YAML file under deploy/, each document of
// it, except the chart's templates (TestHelmChart parses what they render).
func TestYAMLParses(t *testing.T) {
	n := 0
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p == filepath.Join(chartDir, "templates") {
			return filepath.SkipDir
		}
		if ext := filepath.Ext(p); d.IsDir() || ext != ".yaml" && ext != ".yml" {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		dec := yaml.NewDecoder(f)
		for {
			var doc yaml.Node
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Errorf("%s: %v", p, err)
				break
			}
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 5 {
		t.Errorf("parsed %d YAML files under deploy/; want the compose file, worker configs and chart values", n)
	}
}

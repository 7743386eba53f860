package deploy

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// dockerfile is the image's build file, at the repository root.
const dockerfile = "../Dockerfile"

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd, args string
	line      int
}

// stage is a build stage: its FROM and what follows it.
type stage struct {
	image, name string
	ins         []instruction
}

// parseDockerfile reads a Dockerfile's stages and the ARGs declared before
// the first FROM, with their defaults.
func parseDockerfile(t *testing.T, path string) (stages []stage, globals map[string]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	globals = map[string]string{}
	var cur strings.Builder
	start := 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		if body, more := strings.CutSuffix(line, `\`); more {
			cur.WriteString(body + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		cur.Reset()
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args), line: start}
		switch {
		case in.cmd == "FROM":
			fields := strings.Fields(in.args)
			fields = slices.DeleteFunc(fields, func(s string) bool { return strings.HasPrefix(s, "--") })
			s := stage{image: expandArgs(fields[0], globals)}
			if len(fields) == 3 && strings.EqualFold(fields[1], "AS") {
				s.name = fields[2]
			}
			stages = append(stages, s)
		case len(stages) == 0 && in.cmd == "ARG":
			name, def, _ := strings.Cut(in.args, "=")
			globals[name] = def
		case len(stages) > 0:
			stages[len(stages)-1].ins = append(stages[len(stages)-1].ins, in)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return stages, globals
}

var argRef = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?`)

func expandArgs(s string, args map[string]string) string {
	return argRef.ReplaceAllStringFunc(s, func(ref string) string {
		if v, ok := args[argRef.FindStringSubmatch(ref)[1]]; ok {
			return v
		}
		return ref
	})
}

// dockerEntrypoint returns the path of the binary the image runs.
func dockerEntrypoint(t *testing.T) string {
	t.Helper()
	stages, _ := parseDockerfile(t, dockerfile)
	for _, in := range stages[len(stages)-1].ins {
		if in.cmd == "ENTRYPOINT" {
			var argv []string
			if err := json.Unmarshal([]byte(in.args), &argv); err != nil || len(argv) == 0 {
				t.Fatalf("Dockerfile:%d: ENTRYPOINT %s is not the exec (JSON) form", in.line, in.args)
			}
			return argv[0]
		}
	}
	t.Fatal("Dockerfile: the final stage has no ENTRYPOINT")
	return ""
}

var goBuildOutput = regexp.MustCompile(`go build .*-o (\S+)`)

// TestDockerfile lints the Dockerfile without a Docker engine: a
// multi-stage static build, a distroless (or scratch) final stage run by a
// numeric non-root user, the binary as the entrypoint, nothing fetched
// from URLs, and a build context that holds every package of the binary.
func TestDockerfile(t *testing.T) {
	stages, _ := parseDockerfile(t, dockerfile)
	if len(stages) < 2 {
		t.Fatalf("Dockerfile has %d stage(s); want a build stage and a final one", len(stages))
	}
	names := map[string]bool{}
	for i, s := range stages {
		if i < len(stages)-1 && s.name == "" {
			t.Errorf("Dockerfile: build stage %d (FROM %s) has no name (AS ...)", i+1, s.image)
		}
		names[s.name] = true
		if s.image != "scratch" && !names[s.image] {
			ref := s.image[strings.LastIndex(s.image, "/")+1:]
			if !strings.Contains(ref, ":") && !strings.Contains(ref, "@") || strings.HasSuffix(ref, ":latest") {
				t.Errorf("Dockerfile: FROM %s is not pinned to a tag or digest", s.image)
			}
		}
		for _, in := range s.ins {
			if in.cmd == "ADD" {
				t.Errorf("Dockerfile:%d: ADD %s; use COPY (ADD fetches URLs and unpacks archives)", in.line, in.args)
			}
		}
	}

	// The build: static and reproducible, its output copied into the final stage.
	var builtIn, output string
	for _, s := range stages[:len(stages)-1] {
		for _, in := range s.ins {
			if in.cmd != "RUN" || !strings.Contains(in.args, "go build") {
				continue
			}
			for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "./cmd/turnstream"} {
				if !strings.Contains(in.args, want) {
					t.Errorf("Dockerfile:%d: go build without %s", in.line, want)
				}
			}
			if m := goBuildOutput.FindStringSubmatch(in.args); m != nil {
				builtIn, output = s.name, m[1]
			}
		}
	}
	if output == "" {
		t.Fatal("Dockerfile: no build stage runs go build -o ... ./cmd/turnstream")
	}

	final := stages[len(stages)-1]
	if final.image != "scratch" && !strings.HasPrefix(final.image, "gcr.io/distroless/static") {
		t.Errorf("Dockerfile: final stage FROM %s; want gcr.io/distroless/static... or scratch", final.image)
	}
	var user, installed string
	var exposed []string
	for _, in := range final.ins {
		switch in.cmd {
		case "USER":
			user = in.args
		case "EXPOSE":
			exposed = append(exposed, strings.Fields(in.args)...)
		case "COPY":
			f := strings.Fields(in.args)
			if slices.Contains(f, "--from="+builtIn) && slices.Contains(f, output) {
				installed = f[len(f)-1]
			}
		case "RUN":
			t.Errorf("Dockerfile:%d: RUN in the final stage; a distroless image has no shell", in.line)
		}
	}
	uid, gid, _ := strings.Cut(user, ":")
	for _, id := range []string{uid, gid} {
		if n, err := strconv.Atoi(id); id != "" && (err != nil || n == 0) {
			t.Errorf("Dockerfile: USER %q; want a numeric non-root uid[:gid] (Kubernetes' runAsNonRoot checks numbers)", user)
		}
	}
	if uid == "" {
		t.Error("Dockerfile: the final stage sets no USER; it would run as root")
	}
	if installed == "" {
		t.Errorf("Dockerfile: the final stage does not COPY --from=%s %s", builtIn, output)
	}
	if got := dockerEntrypoint(t); got != installed {
		t.Errorf("Dockerfile: ENTRYPOINT runs %s; want the binary copied to %s", got, installed)
	}
	if !slices.Contains(exposed, strconv.Itoa(metricsServer.port)) {
		t.Errorf("Dockerfile: EXPOSE %v; want the metrics port %d", exposed, metricsServer.port)
	}

	// The build context: what the build stage copies exists, .dockerignore
	// keeps it, and it holds every package the binary is built from.
	ignored := dockerignore(t)
	var copied []string
	for _, in := range stages[0].ins {
		if in.cmd != "COPY" || strings.Contains(in.args, "--from") {
			continue
		}
		f := strings.Fields(in.args)
		for _, src := range f[:len(f)-1] {
			src = strings.TrimSuffix(src, "/")
			if _, err := os.Stat(filepath.Join("..", src)); err != nil {
				t.Errorf("Dockerfile:%d: COPY %s: %v", in.line, src, err)
			}
			if slices.Contains(ignored, src) {
				t.Errorf("Dockerfile:%d: COPY %s, which .dockerignore leaves out of the context", in.line, src)
			}
			copied = append(copied, src)
		}
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.Dir}}{{end}}", "../cmd/turnstream").Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/turnstream: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, dir)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue // a module dependency, fetched by go mod download
		}
		top := strings.Split(filepath.ToSlash(rel), "/")[0]
		if !slices.Contains(copied, top) {
			t.Errorf("Dockerfile: package %s is built into the binary but %s/ is not copied into the build stage", rel, top)
		}
	}
	if !slices.Contains(copied, "go.sum") || !slices.Contains(copied, "go.mod") {
		t.Error("Dockerfile: the build stage does not copy go.mod and go.sum")
	}
	if !slices.Contains(ignored, ".git") {
		t.Error(".dockerignore does not leave out .git")
	}
}

// dockerignore returns the patterns of ../.dockerignore, without leading
// or trailing slashes.
func dockerignore(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var pats []string
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			pats = append(pats, strings.Trim(line, "/"))
		}
	}
	return pats
}

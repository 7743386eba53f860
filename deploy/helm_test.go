package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/turnstream/turnstream/internal/config"
)

// chartDir is the Helm chart under test.
const chartDir = "helm/turnstream"

// helmBin finds the Helm CLI: $TURNSTREAM_HELM, else helm on PATH. Without
// it the test is skipped, unless TURNSTREAM_REQUIRE_HELM=1 (set by .ci/run,
// which installs it) makes that a failure.
func helmBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TURNSTREAM_HELM"); p != "" {
		return p
	}
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	if os.Getenv("TURNSTREAM_REQUIRE_HELM") == "1" {
		t.Fatal("the Helm CLI is not installed: go install helm.sh/helm/v3/cmd/helm@v3.22.0 (as .ci/run does)")
	}
	t.Skip("the Helm CLI is not installed (go install helm.sh/helm/v3/cmd/helm@v3.22.0); .ci/run installs it")
	return ""
}

// The parts of the Kubernetes objects the chart renders that the test reads.
type (
	k8sObject struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct {
			Name   string            `yaml:"name"`
			Labels map[string]string `yaml:"labels"`
		} `yaml:"metadata"`
		node *yaml.Node
	}
	deployment struct {
		Spec struct {
			Replicas int         `yaml:"replicas"`
			Selector k8sSelector `yaml:"selector"`
			Template struct {
				Metadata struct {
					Labels map[string]string `yaml:"labels"`
				} `yaml:"metadata"`
				Spec podSpec `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	k8sSelector struct {
		MatchLabels map[string]string `yaml:"matchLabels"`
	}
	podSpec struct {
		TerminationGracePeriodSeconds *int `yaml:"terminationGracePeriodSeconds"`
		SecurityContext               struct {
			RunAsNonRoot *bool `yaml:"runAsNonRoot"`
			RunAsUser    *int  `yaml:"runAsUser"`
		} `yaml:"securityContext"`
		Containers []container `yaml:"containers"`
		Volumes    []struct {
			Name      string `yaml:"name"`
			ConfigMap *struct {
				Name string `yaml:"name"`
			} `yaml:"configMap"`
		} `yaml:"volumes"`
	}
	container struct {
		Name    string   `yaml:"name"`
		Image   string   `yaml:"image"`
		Command []string `yaml:"command"`
		Args    []string `yaml:"args"`
		Env     []struct {
			Name      string `yaml:"name"`
			Value     string `yaml:"value"`
			ValueFrom *struct {
				SecretKeyRef *struct {
					Name string `yaml:"name"`
					Key  string `yaml:"key"`
				} `yaml:"secretKeyRef"`
			} `yaml:"valueFrom"`
		} `yaml:"env"`
		Ports []struct {
			Name          string `yaml:"name"`
			ContainerPort int    `yaml:"containerPort"`
		} `yaml:"ports"`
		ReadinessProbe  *k8sProbe `yaml:"readinessProbe"`
		LivenessProbe   *k8sProbe `yaml:"livenessProbe"`
		SecurityContext struct {
			AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
			ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
			Capabilities             struct {
				Drop []string `yaml:"drop"`
			} `yaml:"capabilities"`
		} `yaml:"securityContext"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
		} `yaml:"volumeMounts"`
	}
	k8sProbe struct {
		HTTPGet *struct {
			Path string `yaml:"path"`
			Port any    `yaml:"port"`
		} `yaml:"httpGet"`
	}
	pdb struct {
		Spec struct {
			MinAvailable   any         `yaml:"minAvailable"`
			MaxUnavailable any         `yaml:"maxUnavailable"`
			Selector       k8sSelector `yaml:"selector"`
		} `yaml:"spec"`
	}
	service struct {
		Spec struct {
			Selector map[string]string `yaml:"selector"`
			Ports    []struct {
				Port       int `yaml:"port"`
				TargetPort any `yaml:"targetPort"`
			} `yaml:"ports"`
		} `yaml:"spec"`
	}
	dataObject struct {
		Data       map[string]string `yaml:"data"`
		StringData map[string]string `yaml:"stringData"`
	}
)

// decode reads the object as one of the kinds above.
func (o k8sObject) decode(t *testing.T, v any) {
	t.Helper()
	if err := o.node.Decode(v); err != nil {
		t.Fatalf("%s %s: %v", o.Kind, o.Metadata.Name, err)
	}
}

// rendered is what `helm template` made, by kind and name.
type rendered map[string]map[string]k8sObject

// renderChart lints and renders the chart with the extra helm arguments.
func renderChart(t *testing.T, helm string, extra ...string) rendered {
	t.Helper()
	run := func(args ...string) []byte {
		cmd := exec.CommandContext(t.Context(), helm, append(args, extra...)...)
		cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
		}
		return out
	}
	run("lint", "--strict", chartDir)
	out := run("template", "rel", chartDir, "--namespace", "ns")
	objs := rendered{}
	dec := yaml.NewDecoder(bytes.NewReader(out))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("helm template: YAML: %v", err)
		}
		if len(n.Content) == 0 {
			continue // an empty document
		}
		o := k8sObject{node: &n}
		o.decode(t, &o)
		if o.APIVersion == "" || o.Kind == "" || o.Metadata.Name == "" {
			t.Errorf("rendered object without apiVersion, kind or name: %+v", o)
			continue
		}
		if objs[o.Kind] == nil {
			objs[o.Kind] = map[string]k8sObject{}
		}
		if _, dup := objs[o.Kind][o.Metadata.Name]; dup {
			t.Errorf("%s %s rendered twice", o.Kind, o.Metadata.Name)
		}
		objs[o.Kind][o.Metadata.Name] = o
	}
	return objs
}

// TestHelmChart lints and renders the chart with its default values, with
// API keys given as values, and with each ci/*-values.yaml, and checks
// what the cluster would run: commands and flags the binary has; probes
// on /readyz and /healthz of the port given to --metrics-addr; a
// termination grace period longer than the drain timeout of the config the
// workers load; API keys from a Secret for every api_key_env; a
// PodDisruptionBudget per Deployment; non-root, locked-down containers.
func TestHelmChart(t *testing.T) {
	helm := helmBin(t)
	cli := turnstreamCLI(t)
	var chart struct {
		AppVersion string `yaml:"appVersion"`
	}
	readYAML(t, filepath.Join(chartDir, "Chart.yaml"), &chart)

	type chartCase struct {
		name    string
		args    []string // for helm lint and helm template
		secrets []string // Secrets the chart must render
	}
	cases := []chartCase{
		{"defaults", nil, nil},
		{"api keys as values", []string{"--set-string", "worker.apiKeys.values.OPENAI_API_KEY=sk-test"}, []string{"rel-turnstream-api-keys"}},
	}
	ci, err := filepath.Glob(filepath.Join(chartDir, "ci", "*-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ci {
		cases = append(cases, chartCase{filepath.Base(f), []string{"-f", f}, nil})
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			objs := renderChart(t, helm, tt.args...)
			for _, s := range tt.secrets {
				if _, ok := objs["Secret"][s]; !ok {
					t.Errorf("no Secret %s rendered", s)
				}
			}
			seen := map[string]bool{}
			for name, o := range objs["Deployment"] {
				var d deployment
				o.decode(t, &d)
				seen[checkDeployment(t, cli, objs, name, d)] = true
				if tt.name == "defaults" {
					for _, c := range d.Spec.Template.Spec.Containers {
						if want := ":" + chart.AppVersion; !strings.HasSuffix(c.Image, want) {
							t.Errorf("Deployment %s: image %s; want the tag %s by default", name, c.Image, chart.AppVersion)
						}
					}
				}
			}
			for _, want := range []string{"worker", "tools"} {
				if !seen[want] {
					t.Errorf("no Deployment runs `turnstream %s`", want)
				}
			}
		})
	}
}

// checkDeployment checks a rendered Deployment and returns the turnstream
// command it runs.
func checkDeployment(t *testing.T, cli *cli, objs rendered, name string, d deployment) string {
	t.Helper()
	where := "Deployment " + name
	pod := d.Spec.Template.Spec
	labels := d.Spec.Template.Metadata.Labels
	if len(d.Spec.Selector.MatchLabels) == 0 || !selects(d.Spec.Selector.MatchLabels, labels) {
		t.Errorf("%s: selector %v does not select its pods %v", where, d.Spec.Selector.MatchLabels, labels)
	}
	if sc := pod.SecurityContext; sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		t.Errorf("%s: pod securityContext runAsNonRoot %s, runAsUser %s; want true and a non-root uid", where, show(sc.RunAsNonRoot), show(sc.RunAsUser))
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%s: %d containers; want 1", where, len(pod.Containers))
	}
	c := pod.Containers[0]
	if sc := c.SecurityContext; sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("%s: container securityContext allowPrivilegeEscalation %s, readOnlyRootFilesystem %s, capabilities drop %v; want false, true, [ALL]",
			where, show(sc.AllowPrivilegeEscalation), show(sc.ReadOnlyRootFilesystem), sc.Capabilities.Drop)
	}
	if len(c.Command) > 0 {
		t.Errorf("%s: command %v replaces the image's entrypoint, the turnstream binary; give args only", where, c.Command)
	}
	cli.check(t, where, c.Args)
	if len(c.Args) == 0 {
		return ""
	}
	cmd := c.Args[0]
	env := map[string]string{}
	secretRefs := map[string][2]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			secretRefs[e.Name] = [2]string{e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key}
		}
	}
	for v, ref := range secretRefs {
		if s, ok := objs["Secret"][ref[0]]; ok {
			var data dataObject
			s.decode(t, &data)
			if _, inData := data.Data[ref[1]]; !inData && data.StringData[ref[1]] == "" {
				t.Errorf("%s: %s from Secret %s key %s, which it does not hold", where, v, ref[0], ref[1])
			}
		}
	}

	switch cmd {
	case "worker", "tools":
		port := metricsPort(t, where, c.Args)
		checkProbe(t, where+" readinessProbe", c, c.ReadinessProbe, metricsServer.ready, port)
		checkProbe(t, where+" livenessProbe", c, c.LivenessProbe, metricsServer.health, port)
		if _, fromSecret := secretRefs["NATS_URL"]; env["NATS_URL"] == "" && !fromSecret {
			t.Errorf("%s: no NATS_URL", where)
		}
		if user := roleUser[cmd]; env["NATS_INBOX_PREFIX"] != inbox(user) {
			t.Errorf("%s: NATS_INBOX_PREFIX = %q; want %q, the %s user's", where, env["NATS_INBOX_PREFIX"], inbox(user), user)
		}
		checkPDB(t, objs, where, labels, d.Spec.Replicas)
	case "mockllm":
		port := addrPort(t, where, c.Args, "addr")
		checkProbe(t, where+" readinessProbe", c, c.ReadinessProbe, "/v1/models", port)
		checkProbe(t, where+" livenessProbe", c, c.LivenessProbe, "/v1/models", port)
	}
	if cmd != "worker" {
		return cmd
	}

	cfg := mountedConfig(t, objs, where, pod, c)
	grace := pod.TerminationGracePeriodSeconds
	if drain := time.Duration(cfg.Worker.DrainTimeout); grace == nil || time.Duration(*grace)*time.Second <= drain {
		t.Errorf("%s: terminationGracePeriodSeconds %s; want more than worker.drain_timeout %s, so the SIGTERM drain ends before SIGKILL", where, show(grace), drain)
	}
	for _, p := range cfg.Providers {
		if p.APIKeyEnv == "" {
			continue
		}
		if ref, ok := secretRefs[p.APIKeyEnv]; !ok || ref[1] != p.APIKeyEnv {
			t.Errorf("%s: provider %s reads $%s, which is not set from a Secret key of that name", where, p.Name, p.APIKeyEnv)
		}
	}
	for _, p := range cfg.Providers {
		checkInClusterURL(t, objs, where, p.Name, p.BaseURL)
	}
	return cmd
}

// checkProbe checks that an HTTP probe GETs path on port of container c.
func checkProbe(t *testing.T, where string, c container, p *k8sProbe, path string, port int) {
	t.Helper()
	if p == nil || p.HTTPGet == nil {
		t.Errorf("%s: none; want an HTTP GET of %s on port %d", where, path, port)
		return
	}
	if got := containerPort(c, p.HTTPGet.Port); p.HTTPGet.Path != path || got != port {
		t.Errorf("%s: GET %s on port %v (%d); want %s on %d", where, p.HTTPGet.Path, p.HTTPGet.Port, got, path, port)
	}
}

// containerPort resolves a port given by number or by name.
func containerPort(c container, port any) int {
	switch p := port.(type) {
	case int:
		return p
	case string:
		if n, err := strconv.Atoi(p); err == nil {
			return n
		}
		for _, cp := range c.Ports {
			if cp.Name == p {
				return cp.ContainerPort
			}
		}
	}
	return 0
}

// checkPDB checks that a PodDisruptionBudget covers the pods and still lets
// a node drain evict one of them.
func checkPDB(t *testing.T, objs rendered, where string, labels map[string]string, replicas int) {
	t.Helper()
	for name, o := range objs["PodDisruptionBudget"] {
		var b pdb
		o.decode(t, &b)
		if len(b.Spec.Selector.MatchLabels) == 0 || !selects(b.Spec.Selector.MatchLabels, labels) {
			continue
		}
		if b.Spec.MinAvailable == nil && b.Spec.MaxUnavailable == nil {
			t.Errorf("%s: PodDisruptionBudget %s sets neither minAvailable nor maxUnavailable", where, name)
		}
		if n, ok := b.Spec.MinAvailable.(int); ok && n >= replicas {
			t.Errorf("%s: PodDisruptionBudget %s minAvailable %d with %d replicas blocks every eviction", where, name, n, replicas)
		}
		if n, ok := b.Spec.MaxUnavailable.(int); ok && n < 1 {
			t.Errorf("%s: PodDisruptionBudget %s maxUnavailable %d blocks every eviction", where, name, n)
		}
		return
	}
	t.Errorf("%s: no PodDisruptionBudget selects its pods", where)
}

// mountedConfig loads the worker config the container's --config names,
// from the ConfigMap mounted there, as the worker does.
func mountedConfig(t *testing.T, objs rendered, where string, pod podSpec, c container) *config.Config {
	t.Helper()
	file, ok := flagValue(c.Args, "config")
	if !ok {
		t.Fatalf("%s: no --config", where)
	}
	var volume string
	for _, m := range c.VolumeMounts {
		if m.MountPath == path.Dir(file) {
			volume = m.Name
		}
	}
	for _, v := range pod.Volumes {
		if v.Name != volume || v.ConfigMap == nil {
			continue
		}
		cm, ok := objs["ConfigMap"][v.ConfigMap.Name]
		if !ok {
			t.Fatalf("%s: ConfigMap %s is not rendered", where, v.ConfigMap.Name)
		}
		var data dataObject
		cm.decode(t, &data)
		text, ok := data.Data[path.Base(file)]
		if !ok {
			t.Fatalf("%s: ConfigMap %s has no %s", where, v.ConfigMap.Name, path.Base(file))
		}
		f := filepath.Join(t.TempDir(), path.Base(file))
		if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(f)
		if err != nil {
			t.Fatalf("%s: %v\n%s", where, err, text)
		}
		return cfg
	}
	t.Fatalf("%s: --config %s is not on a mounted ConfigMap", where, file)
	return nil
}

// checkInClusterURL checks that a provider URL naming a Service of the
// release reaches a container port that serves it.
func checkInClusterURL(t *testing.T, objs rendered, where, provider, raw string) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("%s: provider %s: %v", where, provider, err)
	}
	host := strings.Split(u.Hostname(), ".")[0]
	o, ok := objs["Service"][host]
	if !ok {
		return // outside the release
	}
	var s service
	o.decode(t, &s)
	for _, p := range s.Spec.Ports {
		if strconv.Itoa(p.Port) != u.Port() {
			continue
		}
		for name, d := range objs["Deployment"] {
			var dep deployment
			d.decode(t, &dep)
			if !selects(s.Spec.Selector, dep.Spec.Template.Metadata.Labels) {
				continue
			}
			c := dep.Spec.Template.Spec.Containers[0]
			if got := containerPort(c, p.TargetPort); got != addrPort(t, "Deployment "+name, c.Args, "addr") {
				t.Errorf("%s: provider %s: Service %s port %d goes to %d, not to --addr of Deployment %s", where, provider, host, p.Port, got, name)
			}
			return
		}
	}
	t.Errorf("%s: provider %s: %s names Service %s, which has no port %s to a Deployment", where, provider, raw, host, u.Port())
}

// selects reports whether every label of sel is on labels.
func selects(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// show prints an optional field: its value, or "unset".
func show[T any](p *T) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

func readYAML(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

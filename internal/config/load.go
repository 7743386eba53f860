package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/apis"
	"github.com/turnstream/turnstream/internal/provider/openaichat"
	"github.com/turnstream/turnstream/schemas"
)

// Defaults applied by Load and Default. Defaults of settings another
// package applies are declared there and referenced by ApplyDefaults:
// bus.DefaultAckWait, bus.DefaultToolAckWait, provider.DefaultIdleTimeout,
// and (applied downstream, not here) history.DefaultEchoCap and
// history.DefaultReserve.
const (
	DefaultRoute         = "default"
	DefaultContextTokens = 128000
	// DefaultMaxDeliver is worker.max_deliver's default.
	DefaultMaxDeliver = 10
	// DefaultToolTimeout is worker.tool_timeout's default; the turn loop
	// takes it for a zero ToolTimeout too.
	DefaultToolTimeout = 60 * time.Second
	// MinToolAckWait is the least worker.tool_ack_wait may be.
	MinToolAckWait = time.Second
)

// Load reads, schema-validates and checks a YAML config file.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c, err := Parse(data)
	var se *SchemaError
	switch {
	case errors.As(err, &se):
		se.File = path
		return nil, se
	case err != nil:
		return nil, inFile(path, err)
	}
	return c, nil
}

// Parse decodes YAML config text, validates it against the config schema,
// applies defaults and checks it.
func Parse(data []byte) (*Config, error) {
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err // "yaml: line N: ..."
	}
	if doc == nil {
		return nil, errors.New("empty config")
	}
	if err := validateSchema(doc); err != nil {
		return nil, schemaProblems(data, schemaDoc, err)
	}
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

var (
	schemaOnce sync.Once
	schema     *jsonschema.Schema
	schemaDoc  any // the schema as JSON, for the problems' descriptions
	schemaErr  error
)

// schemaURL names the config schema in validation errors: its $id, not a
// path (a relative name would resolve against the working directory, to
// a file that does not exist).
const schemaURL = "https://github.com/turnstream/turnstream/schemas/" + schemas.Config

func validateSchema(doc any) error {
	schemaOnce.Do(func() {
		f, err := schemas.FS.Open(schemas.Config)
		if err != nil {
			schemaErr = err
			return
		}
		defer f.Close()
		parsed, err := jsonschema.UnmarshalJSON(f)
		if err != nil {
			schemaErr = err
			return
		}
		comp := jsonschema.NewCompiler()
		if err := comp.AddResource(schemaURL, parsed); err != nil {
			schemaErr = err
			return
		}
		schemaDoc = parsed
		schema, schemaErr = comp.Compile(schemaURL)
	})
	if schemaErr != nil {
		return fmt.Errorf("config schema: %w", schemaErr)
	}
	return schema.Validate(doc)
}

// ApplyDefaults fills zero fields with their documented defaults.
func (c *Config) ApplyDefaults() {
	if c.Budgets.MaxIterations == 0 {
		c.Budgets.MaxIterations = 8
	}
	if c.Budgets.MaxToolCalls == 0 {
		c.Budgets.MaxToolCalls = 16
	}
	if c.Budgets.MaxRepeatedToolFailures == 0 {
		c.Budgets.MaxRepeatedToolFailures = 2
	}
	if c.Budgets.WallClock == 0 {
		c.Budgets.WallClock = Duration(2 * time.Minute)
	}
	ceil := &c.Budgets.Ceiling
	ceil.MaxIterations = max(ceil.MaxIterations, c.Budgets.MaxIterations)
	ceil.MaxToolCalls = max(ceil.MaxToolCalls, c.Budgets.MaxToolCalls)
	ceil.MaxRepeatedToolFailures = max(ceil.MaxRepeatedToolFailures, c.Budgets.MaxRepeatedToolFailures)
	ceil.WallClock = max(ceil.WallClock, c.Budgets.WallClock)
	if c.NATS.Prefix == "" {
		c.NATS.Prefix = "turn"
	}
	if c.Worker.Concurrency == 0 {
		c.Worker.Concurrency = 64
	}
	if c.Worker.AckWait == 0 {
		c.Worker.AckWait = Duration(bus.DefaultAckWait)
	}
	if c.Worker.MaxDeliver == 0 {
		c.Worker.MaxDeliver = DefaultMaxDeliver
	}
	if c.Worker.ToolTimeout == 0 {
		c.Worker.ToolTimeout = Duration(DefaultToolTimeout)
	}
	if c.Worker.ToolAckWait == 0 {
		c.Worker.ToolAckWait = Duration(bus.DefaultToolAckWait)
	}
	if c.Worker.DrainTimeout == 0 {
		c.Worker.DrainTimeout = Duration(30 * time.Second)
	}
	for i := range c.Providers {
		if c.Providers[i].IdleTimeout == 0 {
			c.Providers[i].IdleTimeout = Duration(provider.DefaultIdleTimeout)
		}
	}
	for i := range c.Models {
		if c.Models[i].ContextTokens == 0 {
			c.Models[i].ContextTokens = DefaultContextTokens
		}
	}
	c.Limits.applyDefaults()
}

func (l *Limits) applyDefaults() {
	r, d := &l.Response, DefaultResponseLimits
	set := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	set(&r.MaxLineBytes, d.MaxLineBytes)
	set(&r.MaxEventBytes, d.MaxEventBytes)
	set(&r.MaxStreamBytes, d.MaxStreamBytes)
	set(&r.MaxTextBytes, d.MaxTextBytes)
	set(&r.MaxReasoningBytes, d.MaxReasoningBytes)
	set(&r.MaxToolCalls, d.MaxToolCalls)
	set(&r.MaxArgumentBytes, d.MaxArgumentBytes)
	set(&r.MaxMessageBytes, d.MaxMessageBytes)
	set(&r.MaxChunks, d.MaxChunks)
	set(&l.ToolResult.MaxBytes, DefaultToolResultMaxBytes)
	if l.ToolResult.Redact == nil {
		redact := true
		l.ToolResult.Redact = &redact
	}
}

// Bounds of the limits' values: beyond them a value is a mistake (NATS
// refuses payloads over 64 MiB).
const (
	maxLimitBytes     = 64 << 20
	maxStreamBytes    = 1 << 30
	maxToolCallsLimit = 4096
	maxChunksLimit    = 16 << 20
	minFrameBytes     = 1 << 10
)

// validate checks the limits; zero fields mean the defaults.
func (l *Limits) validate(bad func(format string, args ...any)) {
	r := l.Response
	within := func(key string, v, lo, hi int) {
		if v != 0 && (v < lo || v > hi) {
			bad("limits.%s: %d is out of range: it must be from %d to %d", key, v, lo, hi)
		}
	}
	within("response.max_line_bytes", r.MaxLineBytes, minFrameBytes, maxLimitBytes)
	within("response.max_event_bytes", r.MaxEventBytes, minFrameBytes, maxLimitBytes)
	within("response.max_stream_bytes", r.MaxStreamBytes, minFrameBytes, maxStreamBytes)
	within("response.max_text_bytes", r.MaxTextBytes, 1, maxLimitBytes)
	within("response.max_reasoning_bytes", r.MaxReasoningBytes, 1, maxLimitBytes)
	within("response.max_tool_calls", r.MaxToolCalls, 1, maxToolCallsLimit)
	within("response.max_argument_bytes", r.MaxArgumentBytes, 1, maxLimitBytes)
	within("response.max_message_bytes", r.MaxMessageBytes, 1, maxLimitBytes)
	within("response.max_chunks", r.MaxChunks, 1, maxChunksLimit)
	within("tool_result.max_bytes", l.ToolResult.MaxBytes, minFrameBytes, maxLimitBytes)
	eff := func(v, def int) int {
		if v == 0 {
			return def
		}
		return v
	}
	d := DefaultResponseLimits
	line, event, stream := eff(r.MaxLineBytes, d.MaxLineBytes), eff(r.MaxEventBytes, d.MaxEventBytes), eff(r.MaxStreamBytes, d.MaxStreamBytes)
	if line > event {
		bad("limits.response: max_line_bytes (%d) exceeds max_event_bytes (%d): an event holds its lines", line, event)
	}
	if event > stream {
		bad("limits.response: max_event_bytes (%d) exceeds max_stream_bytes (%d): a stream holds its events", event, stream)
	}
}

// Validate checks references and uniqueness; it reports every problem found.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	providers := map[string]bool{}
	for i, p := range c.Providers {
		switch {
		case p.Name == "":
			bad("providers[%d]: name is required", i)
		case providers[p.Name]:
			bad("providers[%d]: duplicate provider %q", i, p.Name)
		}
		providers[p.Name] = true
		api, ok := apis.Lookup(string(p.API))
		if !ok || !api.Configurable() {
			bad("providers[%d] %q: unknown api %q (one of %s)", i, p.Name, p.API, strings.Join(apis.Configurable(), ", "))
		}
		if !strings.HasPrefix(p.BaseURL, "http://") && !strings.HasPrefix(p.BaseURL, "https://") {
			bad("providers[%d] %q: base_url must be an http(s) URL", i, p.Name)
		}
		if ok && !p.Streams() && !api.Settings.NonStreaming {
			bad("providers[%d] %q: stream: false is not supported by %s, which always streams", i, p.Name, p.API)
		}
		if ok && p.Store && !api.Settings.Store {
			bad("providers[%d] %q: store is not supported by %s, which keeps no responses", i, p.Name, p.API)
		}
		if ok && p.MaxTokens != 0 && !api.Settings.MaxTokens {
			bad("providers[%d] %q: max_tokens is not a setting of %s", i, p.Name, p.API)
		}
		if ok && p.ThinkingBudget != 0 && !api.Settings.Thinking {
			bad("providers[%d] %q: thinking_budget is not a setting of %s", i, p.Name, p.API)
		}
		if p.APIKeyEnv != "" && p.APIKeyFile != "" {
			bad("providers[%d] %q: set api_key_env or api_key_file, not both", i, p.Name)
		}
	}
	models := map[Target]bool{}
	for i, m := range c.Models {
		if !providers[m.Provider] {
			bad("models[%d] %q: unknown provider %q", i, m.Name, m.Provider)
		}
		t := Target{Provider: m.Provider, Model: m.Name}
		if models[t] {
			bad("models[%d]: duplicate model %s", i, t)
		}
		models[t] = true
	}
	routes := map[string]bool{}
	for i, r := range c.Routes {
		if routes[r.Name] {
			bad("routes[%d]: duplicate route %q", i, r.Name)
		}
		routes[r.Name] = true
		if len(r.Targets) == 0 {
			bad("routes[%d] %q: at least one target is required", i, r.Name)
		}
		for j, t := range r.Targets {
			if !models[t] {
				bad("routes[%d] %q: targets[%d]: no model %s is configured", i, r.Name, j, t)
			}
		}
	}
	if c.History.SummaryRoute != "" && !routes[c.History.SummaryRoute] {
		bad("history: summary_route %q is not a configured route", c.History.SummaryRoute)
	}
	if len(c.Routes) > 0 && !routes[DefaultRoute] {
		bad("routes: a route named %q is required", DefaultRoute)
	}
	if w := c.Worker.ToolAckWait.D(); w != 0 && w < MinToolAckWait {
		bad("worker: tool_ack_wait %s is too short: it must be at least %s", w, MinToolAckWait)
	}
	c.Limits.validate(bad)
	return errors.Join(errs...)
}

// APIKey reads provider p's key from its environment variable or file. A
// provider with neither has no key ("").
func (c *Config) APIKey(p Provider) (string, error) {
	switch {
	case p.APIKeyEnv != "":
		v, ok := os.LookupEnv(p.APIKeyEnv)
		if !ok || v == "" {
			return "", fmt.Errorf("config: provider %q: environment variable %s is not set", p.Name, p.APIKeyEnv)
		}
		return v, nil
	case p.APIKeyFile != "":
		b, err := os.ReadFile(p.APIKeyFile)
		if err != nil {
			return "", fmt.Errorf("config: provider %q: key file: %w", p.Name, err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	return "", nil
}

// Provider returns the named provider.
func (c *Config) Provider(name string) (Provider, bool) {
	for _, p := range c.Providers {
		if p.Name == name {
			return p, true
		}
	}
	return Provider{}, false
}

// Model returns the model of a target.
func (c *Config) Model(t Target) (Model, bool) {
	for _, m := range c.Models {
		if m.Provider == t.Provider && m.Name == t.Model {
			return m, true
		}
	}
	return Model{}, false
}

// Route returns the named route; "" means DefaultRoute.
func (c *Config) Route(name string) (Route, bool) {
	if name == "" {
		name = DefaultRoute
	}
	for _, r := range c.Routes {
		if r.Name == name {
			return r, true
		}
	}
	return Route{}, false
}

// Mock returns the configuration dev and demo use without a file: one
// OpenAI-compatible provider at baseURL (the embedded mock), one model and
// the default route.
func Mock(baseURL string) *Config {
	c := &Config{
		Providers: []Provider{{Name: "mock", API: API(openaichat.API.Name), BaseURL: baseURL}},
		Models:    []Model{{Provider: "mock", Name: "mock-1"}},
		Routes:    []Route{{Name: DefaultRoute, Targets: []Target{{Provider: "mock", Model: "mock-1"}}}},
	}
	c.ApplyDefaults()
	return c
}

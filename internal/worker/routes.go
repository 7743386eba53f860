package worker

import (
	"fmt"
	"net/http"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/apis"
)

// routeTable resolves route names to their target chains.
type routeTable struct {
	chains  map[string][]provider.Target
	context map[string]int // smallest context window of each chain
}

// Chain implements turn.Routes.
func (t routeTable) Chain(route string) ([]provider.Target, error) {
	if route == "" {
		route = config.DefaultRoute
	}
	chain, ok := t.chains[route]
	if !ok {
		return nil, fmt.Errorf("worker: no route %q", route)
	}
	return chain, nil
}

// ContextTokens implements turn.Routes.
func (t routeTable) ContextTokens(route string) int {
	if route == "" {
		route = config.DefaultRoute
	}
	return t.context[route]
}

// newAdapter builds the adapter of a provider's wire API, through the
// API's descriptor.
func newAdapter(api provider.API, p config.Provider, key string, hc *http.Client) (provider.Adapter, error) {
	if !api.Configurable() {
		return nil, fmt.Errorf("api %q is not supported", p.API)
	}
	return api.New(provider.AdapterOptions{
		BaseURL: p.BaseURL, APIKey: key, Headers: p.Headers, HTTPClient: hc,
		IdleTimeout: p.IdleTimeout.D(), Stream: p.Streams(), Store: p.Store,
		MaxTokens: p.MaxTokens, ThinkingBudget: p.ThinkingBudget,
	})
}

// adapterFor builds provider p's adapter: with build when it is set (no
// key is read), else its wire API's own, with its key.
func adapterFor(cfg *config.Config, api provider.API, p config.Provider, hc *http.Client, build AdapterFunc) (provider.Adapter, error) {
	if build != nil {
		a, err := build(p)
		if err != nil {
			return nil, fmt.Errorf("worker: provider %q: %w", p.Name, err)
		}
		return a, nil
	}
	key, err := cfg.APIKey(p)
	if err != nil {
		return nil, err
	}
	a, err := newAdapter(api, p, key, hc)
	if err != nil {
		return nil, fmt.Errorf("worker: provider %q: %w", p.Name, err)
	}
	return a, nil
}

// buildRegistry registers one adapter per configured provider (adapterFor),
// with its models, capabilities and retry policy, and resolves the routes.
func buildRegistry(cfg *config.Config, hc *http.Client, build AdapterFunc) (*provider.Registry, routeTable, error) {
	reg := provider.NewRegistry()
	for _, p := range cfg.Providers {
		api, _ := apis.Lookup(string(p.API))
		a, err := adapterFor(cfg, api, p, hc, build)
		if err != nil {
			return nil, routeTable{}, err
		}
		base := api.Capabilities
		if api.Settings.Thinking && p.ThinkingBudget > 0 {
			// With thinking on, a tool step's results are refused unless
			// its assistant message opens with its signed thinking: a step
			// without its echo (over the cap, another model's) replays
			// flat, not natively without it.
			base.ReasoningEcho = true
		}
		caps := capabilities(base, p.Capabilities)
		format := p.ToolCallIDFormat
		if format == "" {
			format = api.CallIDFormat
		}
		meta := provider.Metadata{ID: p.Name, API: api.Name, Replay: api.Replay, Deprecated: p.Deprecated, Capabilities: caps, CallIDFormat: format,
			DurableCursor: p.Store && caps.StatefulContinuation && api.Continuation == provider.ContinueDurableCursor}
		for _, m := range cfg.Models {
			if m.Provider != p.Name {
				continue
			}
			mc := capabilities(caps, m.Capabilities)
			if m.SupportsTools != nil {
				mc.Tools = *m.SupportsTools
			}
			meta.Models = append(meta.Models, provider.Model{Name: m.Name, ContextTokens: m.ContextTokens, Capabilities: mc})
		}
		_, err = reg.Register(provider.Registration{
			ID: p.Name, Routes: []string{p.Name}, Metadata: meta, Adapter: a,
			Retry: provider.RetryPolicy{
				Mode: provider.RetryMode(p.Retry.Mode), MaxRetries: p.Retry.MaxRetries,
				Initial: p.Retry.InitialDelay.D(), Max: p.Retry.MaxDelay.D(), Jitter: p.Retry.Jitter,
			},
		})
		if err != nil {
			return nil, routeTable{}, fmt.Errorf("worker: provider %q: %w", p.Name, err)
		}
	}
	table := routeTable{chains: map[string][]provider.Target{}, context: map[string]int{}}
	for _, r := range cfg.Routes {
		for _, t := range r.Targets {
			table.chains[r.Name] = append(table.chains[r.Name], provider.Target{Provider: t.Provider, Model: t.Model})
			if m, ok := cfg.Model(t); ok && (table.context[r.Name] == 0 || m.ContextTokens < table.context[r.Name]) {
				table.context[r.Name] = m.ContextTokens
			}
		}
	}
	return reg, table, nil
}

// capabilities applies config overrides to base.
func capabilities(base provider.Capabilities, o config.Capabilities) provider.Capabilities {
	set := func(dst *bool, v *bool) {
		if v != nil {
			*dst = *v
		}
	}
	set(&base.Text, o.Text)
	set(&base.Streaming, o.Streaming)
	set(&base.Tools, o.Tools)
	set(&base.NativeToolHistory, o.NativeToolHistory)
	set(&base.ReasoningEcho, o.ReasoningEcho)
	set(&base.StatefulContinuation, o.StatefulContinuation)
	set(&base.StructuredOutput, o.StructuredOutput)
	return base
}

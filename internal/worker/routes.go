package worker

import (
	"fmt"
	"net/http"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaichat"
)

// routeTable resolves route names to bound target chains.
type routeTable map[string][]provider.Binding

// Chain implements turn.Routes.
func (t routeTable) Chain(route string) ([]provider.Binding, error) {
	if route == "" {
		route = config.DefaultRoute
	}
	chain, ok := t[route]
	if !ok {
		return nil, fmt.Errorf("worker: no route %q", route)
	}
	return chain, nil
}

// buildRoutes creates one adapter per provider and binds every route target.
func buildRoutes(cfg *config.Config, hc *http.Client) (routeTable, error) {
	adapters := make(map[string]provider.Adapter, len(cfg.Providers))
	for _, p := range cfg.Providers {
		key, err := cfg.APIKey(p)
		if err != nil {
			return nil, err
		}
		switch p.API {
		case config.APIOpenAIChat, config.APIDeepSeekChat:
			a, err := openaichat.New(openaichat.Options{
				BaseURL: p.BaseURL, APIKey: key, Headers: p.Headers,
				HTTPClient: hc, IdleTimeout: p.IdleTimeout.D(),
			})
			if err != nil {
				return nil, fmt.Errorf("worker: provider %q: %w", p.Name, err)
			}
			adapters[p.Name] = a
		default:
			return nil, fmt.Errorf("worker: provider %q: api %q is not supported yet", p.Name, p.API)
		}
	}
	table := make(routeTable, len(cfg.Routes))
	for _, r := range cfg.Routes {
		for _, t := range r.Targets {
			table[r.Name] = append(table[r.Name], provider.Binding{
				Target:  provider.Target{Provider: t.Provider, Model: t.Model},
				Adapter: adapters[t.Provider],
				Retry:   provider.DefaultRetryPolicy,
			})
		}
	}
	return table, nil
}

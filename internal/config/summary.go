package config

import (
	"maps"
	"net/url"
	"slices"
)

// Summary is what may be shown of a configuration to anyone allowed to ask
// (the config endpoint of the turnstream-worker NATS service): names, wire
// APIs, routes, capabilities, budgets, concurrency, timeouts and limits. It
// holds no secret: no key, nor the variable or file a key is read from
// (only which of the two it is), no header value (only the names), no
// NATS URL, and each base URL without its user information, query or
// fragment. The types it shares with Config hold none either: the file
// holds no keys by design.
type Summary struct {
	Providers []ProviderSummary `json:"providers"`
	Models    []Model           `json:"models"`
	Routes    []Route           `json:"routes"`
	Budgets   Budgets           `json:"budgets"`
	Worker    Worker            `json:"worker"`
	NATS      NATSSummary       `json:"nats"`
	History   History           `json:"history"`
	Limits    Limits            `json:"limits"`
}

// ProviderSummary is a Provider without its secrets.
type ProviderSummary struct {
	Name string `json:"name"`
	API  API    `json:"api"`
	// BaseURL is the provider's base URL without user information, query
	// or fragment; "" when it does not parse.
	BaseURL string `json:"base_url"`
	// APIKey says where the key is read from: "env", "file" or "none".
	APIKey string `json:"api_key"`
	// HeaderNames are the names of the extra headers, sorted; never their
	// values.
	HeaderNames      []string     `json:"header_names,omitempty"`
	IdleTimeout      Duration     `json:"idle_timeout"`
	Deprecated       bool         `json:"deprecated,omitempty"`
	Capabilities     Capabilities `json:"capabilities,omitzero"`
	Retry            Retry        `json:"retry,omitzero"`
	ToolCallIDFormat string       `json:"tool_call_id_format,omitempty"`
	Store            bool         `json:"store,omitempty"`
	Stream           bool         `json:"stream"`
	MaxTokens        int          `json:"max_tokens,omitempty"`
	ThinkingBudget   int          `json:"thinking_budget,omitempty"`
}

// NATSSummary is the NATS settings without the server URL, which may carry
// credentials.
type NATSSummary struct {
	Prefix   string `json:"prefix"`
	Replicas int    `json:"replicas"`
}

// Summary returns the summary of c.
func (c *Config) Summary() Summary {
	s := Summary{
		Models:  slices.Clone(c.Models),
		Routes:  slices.Clone(c.Routes),
		Budgets: c.Budgets,
		Worker:  c.Worker,
		NATS:    NATSSummary{Prefix: c.NATS.Prefix, Replicas: c.NATS.Replicas},
		History: c.History,
		Limits:  c.Limits,
	}
	for _, p := range c.Providers {
		key := "none"
		switch {
		case p.APIKeyEnv != "":
			key = "env"
		case p.APIKeyFile != "":
			key = "file"
		}
		s.Providers = append(s.Providers, ProviderSummary{
			Name: p.Name, API: p.API, BaseURL: PublicURL(p.BaseURL), APIKey: key,
			HeaderNames: slices.Sorted(maps.Keys(p.Headers)),
			IdleTimeout: p.IdleTimeout, Deprecated: p.Deprecated, Capabilities: p.Capabilities, Retry: p.Retry,
			ToolCallIDFormat: p.ToolCallIDFormat, Store: p.Store, Stream: p.Streams(),
			MaxTokens: p.MaxTokens, ThinkingBudget: p.ThinkingBudget,
		})
	}
	return s
}

// PublicURL is raw without user information, query or fragment (where
// credentials hide in a URL), or "" when raw does not parse.
func PublicURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}

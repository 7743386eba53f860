package config

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestPublicURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://api.openai.com/v1", "https://api.openai.com/v1"},
		{"https://user:s3cret@llm.example.com:8443/v1", "https://llm.example.com:8443/v1"},
		{"https://token@llm.example.com/v1", "https://llm.example.com/v1"},
		{"https://llm.example.com/v1?api-key=s3cret&x=1", "https://llm.example.com/v1"},
		{"https://llm.example.com/v1?", "https://llm.example.com/v1"},
		{"https://llm.example.com/v1#s3cret", "https://llm.example.com/v1"},
		{"http://[::1]:8080/v1", "http://[::1]:8080/v1"},
		{"http://bad host/%zz", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := PublicURL(tt.in); got != tt.want {
				t.Errorf("PublicURL(%q) = %q; want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestSummaryHoldsNoSecret: the summary of a configuration whose base
// URLs, headers, NATS URL and key settings hold secrets names its
// providers, models and routes and holds none of the secrets.
func TestSummaryHoldsNoSecret(t *testing.T) {
	const secret = "s3cretVALUE"
	t.Setenv("TURNSTREAM_SUMMARY_KEY", secret)
	c, err := Parse([]byte(`providers:
  - name: openai
    api: openai_chat_completions
    base_url: "https://user:` + secret + `@api.example.com/v1?key=` + secret + `"
    api_key_env: TURNSTREAM_SUMMARY_KEY
    headers: {X-Org: ` + secret + `}
  - {name: backup, api: anthropic_messages, base_url: "http://127.0.0.1:8081", api_key_file: /run/secrets/` + secret + `}
models:
  - {provider: openai, name: gpt-4o-mini}
  - {provider: backup, name: claude-x}
routes:
  - {name: default, targets: [{provider: openai, model: gpt-4o-mini}, {provider: backup, model: claude-x}]}
nats: {url: "nats://worker:` + secret + `@nats:4222", prefix: acme}
worker: {concurrency: 7}
`))
	if err != nil {
		t.Fatalf("Parse() = %v", err)
	}
	if key, err := c.APIKey(c.Providers[0]); err != nil || key != secret {
		t.Fatalf("APIKey() = %q, %v; want the secret (the test's premise)", key, err)
	}
	b, err := json.Marshal(c.Summary())
	if err != nil {
		t.Fatalf("json.Marshal(Summary()) = %v", err)
	}
	got := string(b)
	if strings.Contains(got, secret) || strings.Contains(got, "TURNSTREAM_SUMMARY_KEY") {
		t.Errorf("Summary() = %s; want no secret, key variable or key file", got)
	}
	for _, want := range []string{`"name":"openai"`, `"name":"backup"`, `"api":"anthropic_messages"`, `"name":"gpt-4o-mini"`,
		`"name":"default"`, `"base_url":"https://api.example.com/v1"`, `"api_key":"env"`, `"api_key":"file"`,
		`"header_names":["X-Org"]`, `"prefix":"acme"`, `"concurrency":7`, `"idle_timeout":"1m0s"`} {
		if !strings.Contains(got, want) {
			t.Errorf("Summary() = %s; want it to hold %s", got, want)
		}
	}
}

package anthropic_test

import (
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/anthropic"
	"github.com/turnstream/turnstream/internal/provider/conformance"
)

func TestConformance(t *testing.T) {
	model := provider.Model{Name: "claude-sonnet-4-5", ContextTokens: 200000, Capabilities: anthropic.API.Capabilities}
	conformance.Run(t, conformance.Subject{
		Dialect: conformance.Messages{},
		Model:   &model,
		New: func(t *testing.T, baseURL string, idle time.Duration) provider.Adapter {
			a, err := anthropic.New(anthropic.Options{BaseURL: baseURL, APIKey: "sk-ant-conformance", IdleTimeout: idle})
			if err != nil {
				t.Fatal(err)
			}
			return a
		},
	})
}

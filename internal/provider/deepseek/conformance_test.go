package deepseek_test

import (
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/conformance"
	"github.com/turnstream/turnstream/internal/provider/deepseek"
)

func TestConformance(t *testing.T) {
	model := provider.Model{Name: "deepseek-chat", ContextTokens: 128000, Capabilities: deepseek.API.Capabilities}
	conformance.Run(t, conformance.Subject{
		Dialect: conformance.Chat{ReasoningField: "reasoning_content"},
		Model:   &model,
		New: func(t *testing.T, baseURL string, idle time.Duration) provider.Adapter {
			a, err := deepseek.New(deepseek.Options{BaseURL: baseURL, IdleTimeout: idle})
			if err != nil {
				t.Fatal(err)
			}
			return a
		},
	})
}

package responses_test

import (
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/conformance"
	"github.com/turnstream/turnstream/internal/provider/responses"
)

func TestConformance(t *testing.T) {
	model := provider.Model{Name: "gpt-5-mini", ContextTokens: 400000, Capabilities: responses.API.Capabilities}
	conformance.Run(t, conformance.Subject{
		Dialect: conformance.Responses{},
		Model:   &model,
		New: func(t *testing.T, baseURL string, idle time.Duration) provider.Adapter {
			a, err := responses.New(responses.Options{BaseURL: baseURL, IdleTimeout: idle, Stream: true})
			if err != nil {
				t.Fatal(err)
			}
			return a
		},
	})
}

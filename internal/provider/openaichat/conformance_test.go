package openaichat_test

import (
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/conformance"
	"github.com/turnstream/turnstream/internal/provider/openaichat"
)

func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Subject{
		Dialect: conformance.Chat{},
		New: func(t *testing.T, baseURL string, idle time.Duration) provider.Adapter {
			a, err := openaichat.New(openaichat.Options{BaseURL: baseURL, IdleTimeout: idle})
			if err != nil {
				t.Fatal(err)
			}
			return a
		},
	})
}

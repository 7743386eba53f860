package responses_test

import (
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/conformance"
	"github.com/turnstream/turnstream/internal/provider/responses"
)

func TestConformance(t *testing.T) {
	conformance.Run(t, subject(conformance.Responses{}))
}

// TestConformanceItemIDPerEvent runs the suite against a gateway that
// names one output item by a new item id in every event.
func TestConformanceItemIDPerEvent(t *testing.T) {
	conformance.Run(t, subject(conformance.Responses{ItemIDPerEvent: true}))
}

func subject(d conformance.Responses) conformance.Subject {
	model := provider.Model{Name: "gpt-5-mini", ContextTokens: 400000, Capabilities: responses.API.Capabilities}
	return conformance.Subject{
		Dialect: d,
		Model:   &model,
		New: func(t *testing.T, baseURL string, idle time.Duration) provider.Adapter {
			a, err := responses.New(responses.Options{BaseURL: baseURL, IdleTimeout: idle, Stream: true})
			if err != nil {
				t.Fatal(err)
			}
			return a
		},
	}
}

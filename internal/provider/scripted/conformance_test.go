package scripted_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/conformance"
	"github.com/turnstream/turnstream/internal/provider/openaichat"
	"github.com/turnstream/turnstream/internal/provider/scripted"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestConformance records each case through the Chat Completions adapter,
// as a worker would publish it (frames, then the attempt's end marker), and
// runs the conformance case against the replay derived from that record:
// the replay must end exactly as the original did.
func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Subject{
		Dialect: conformance.Chat{},
		New: func(t *testing.T, baseURL string, idle time.Duration) provider.Adapter {
			live, err := openaichat.New(openaichat.Options{BaseURL: baseURL, IdleTimeout: idle})
			if err != nil {
				t.Fatal(err)
			}
			body, err := live.Prepare(conformance.Request(), provider.Model{Name: "m"})
			if err != nil {
				t.Fatal(err)
			}
			var chunks []wire.Chunk
			rec := func(c wire.Chunk) {
				c.SessionID, c.TurnID, c.Step, c.Attempt, c.Seq, c.Provider, c.Model = "s", "t", 1, 1, len(chunks)+1, "p", "m"
				chunks = append(chunks, c)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			_, err = live.Stream(ctx, body, func(f provider.Frame) error {
				rec(wire.Chunk{Raw: f.Raw, Event: f.Event, Delta: f.Delta})
				return nil
			})
			end := wire.Chunk{Marker: wire.MarkerCompleted}
			var f *provider.Failure
			if errors.As(err, &f) {
				end = wire.Chunk{Marker: wire.MarkerFailed, Failure: string(f.Class), HTTPStatus: f.Status,
					ProviderDelayMS: f.RetryAfter.Milliseconds(), RequestID: f.RequestID}
			}
			rec(end)
			script, err := scripted.Derive(chunks)
			if err != nil {
				t.Fatalf("Derive() = %v", err)
			}
			a, err := scripted.New(script)
			if err != nil {
				t.Fatal(err)
			}
			return a
		},
	})
}

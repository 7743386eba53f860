package scripted_test

import (
	"bytes"
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
// as a worker would publish it (a raw frame and a chunk per frame, then
// the attempt's end marker), and
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
			var (
				frames []wire.RawFrame
				chunks []wire.Chunk
			)
			rec := func(c wire.Chunk) {
				c.SessionID, c.TurnID, c.Step, c.Attempt, c.Seq, c.Provider, c.Model = "s", "t", 1, 1, len(chunks)+1, "p", "m"
				chunks = append(chunks, c)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			_, err = live.Stream(ctx, body, func(f provider.Frame) error {
				frames = append(frames, wire.RawFrame{SessionID: "s", TurnID: "t", Step: 1, Attempt: 1, Seq: len(chunks) + 1,
					Provider: "p", Model: "m", Event: f.Event, Bytes: bytes.Clone(f.Raw)})
				rec(wire.Chunk{Event: f.Event, Delta: f.Delta})
				return nil
			})
			end := wire.Chunk{Marker: wire.MarkerCompleted}
			var f *provider.Failure
			if errors.As(err, &f) {
				end = wire.Chunk{Marker: wire.MarkerFailed, Failure: string(f.Class), HTTPStatus: f.Status,
					ProviderDelayMS: f.RetryAfter.Milliseconds(), RequestID: f.RequestID}
			}
			rec(end)
			script, err := scripted.Derive(frames, chunks)
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

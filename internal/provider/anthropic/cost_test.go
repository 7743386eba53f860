package anthropic

import (
	"bytes"
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/providertest"
)

// TestHostileStreamCost: a stream's cost grows with its size, never with its
// square. Within the limits (frames, reasoning bytes), a stream of many
// blocks each followed by a stop reason is translated in about the time of
// its decoding (a walk of every block per stop reason takes minutes), and
// a signature in tiny fragments allocates about what its decoding does (a
// signature copied whole on every fragment allocates gigabytes).
func TestHostileStreamCost(t *testing.T) {
	const n = 40000
	start := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n"
	stop := "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	var blocks, signature bytes.Buffer
	blocks.WriteString(start)
	for i := range n {
		blocks.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":" + strconv.Itoa(i) + ",\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	}
	for range n {
		blocks.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}\n\n")
	}
	blocks.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n" + stop)
	signature.WriteString(start + "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"hm\"}}\n\n")
	for range 64000 {
		signature.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"EqQBCkgI\"}}\n\n")
	}
	signature.WriteString(stop)
	for _, tt := range []struct {
		name string
		body []byte
	}{{"blocks and stop reasons", blocks.Bytes()}, {"a signature in fragments", signature.Bytes()}} {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := providertest.Serve(t, sse(tt.body))
			a := newAdapter(t, srv.URL, Options{})
			ctx, cancel := context.WithTimeout(provider.WithLimits(t.Context(), provider.Limits{MaxChunks: 4 * n}), time.Minute)
			defer cancel()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			began := time.Now()
			_, err := a.Stream(ctx, []byte(`{}`), func(provider.Frame) error { return nil })
			took := time.Since(began)
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatalf("Stream() error = %v", err)
			}
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d bytes in %v, %d MiB allocated", len(tt.body), took, allocated>>20)
			if took > 30*time.Second || allocated > 4<<30 {
				t.Errorf("Stream() took %v and allocated %d MiB for %d bytes; want under 30s and 4 GiB", took, allocated>>20, len(tt.body))
			}
		})
	}
}

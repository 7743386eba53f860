package bus

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/natstest"
)

// TestEnsureLeavesConfiguredStreamsAlone: once the topology exists, the
// next Ensure (every worker's start) finds every stream and bucket as it
// wants it and updates none.
func TestEnsureLeavesConfiguredStreamsAlone(t *testing.T) {
	srv := natstest.Start(t)
	_, js := srv.JetStream()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	topo := Topology{}
	if err := topo.Ensure(ctx, js); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range topo.Streams() {
		s, err := js.Stream(ctx, cfg.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !sameStream(s.CachedInfo().Config, cfg) {
			t.Errorf("stream %s as stored is not what the topology asks for: the next Ensure would update it\nhave %+v\nwant %+v", cfg.Name, s.CachedInfo().Config, cfg)
		}
		if got := s.CachedInfo().Created; got.IsZero() {
			t.Errorf("stream %s: no creation time", cfg.Name)
		}
	}
	// A changed setting is still applied.
	changed := Topology{ChunkMaxAge: 2 * time.Hour}
	if err := changed.Ensure(ctx, js); err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, "TURN_CHUNKS")
	if err != nil {
		t.Fatal(err)
	}
	if s.CachedInfo().Config.MaxAge != 2*time.Hour {
		t.Errorf("TURN_CHUNKS max age = %v after Ensure with 2h; want it updated", s.CachedInfo().Config.MaxAge)
	}
	for _, cfg := range []jetstream.KeyValueConfig{topo.StateConfig(), topo.ClaimsConfig()} {
		b, err := EnsureBucket(ctx, js, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if st, err := b.Status(ctx); err != nil || st.History() != int64(cfg.History) || st.TTL() != cfg.TTL {
			t.Errorf("bucket %s: status %+v, %v; want history %d, ttl %v", cfg.Bucket, st, err, cfg.History, cfg.TTL)
		}
	}
}

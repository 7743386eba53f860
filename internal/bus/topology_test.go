package bus_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestRollupRefusedOutsideFencedStreams: a client allowed to publish a
// request or a result cannot purge the stream with a rollup header; the
// server refuses it and every stored record stays. A topology ensured
// before the fix (every stream allowing rollups) is updated by Ensure.
func TestRollupRefusedOutsideFencedStreams(t *testing.T) {
	srv := natstest.Start(t)
	_, js := srv.JetStream()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	topo := bus.Topology{}
	// As the topology was: every stream allowing rollups.
	for _, cfg := range topo.Streams() {
		cfg.AllowRollup = true
		if _, err := js.CreateOrUpdateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	if err := topo.Ensure(ctx, js); err != nil {
		t.Fatalf("Ensure() = %v", err)
	}
	s := wire.Subjects{}
	for _, tt := range []struct {
		stream  string
		subject func(i int) string
	}{
		{wire.StreamSubmit, func(i int) string { return s.Submit(fmt.Sprintf("s%d", i)) }},
		{wire.StreamResults, func(i int) string { return s.Result(fmt.Sprintf("s%d", i)) }},
		{wire.StreamTools, func(i int) string { return s.Tool(fmt.Sprintf("tool%d", i)) }},
		{wire.StreamDead, func(i int) string { return s.Dead(fmt.Sprintf("s%d", i)) }},
	} {
		t.Run(tt.stream, func(t *testing.T) {
			stream, err := js.Stream(ctx, tt.stream)
			if err != nil {
				t.Fatal(err)
			}
			if stream.CachedInfo().Config.AllowRollup {
				t.Fatalf("%s allows rollups after Ensure", tt.stream)
			}
			for i := range 3 {
				if _, err := js.Publish(ctx, tt.subject(i), []byte(`{}`)); err != nil {
					t.Fatal(err)
				}
			}
			for _, rollup := range []string{jetstream.MsgRollupAll, jetstream.MsgRollupSubject} {
				m := &nats.Msg{Subject: tt.subject(0), Data: []byte(`{}`), Header: nats.Header{jetstream.MsgRollup: {rollup}}}
				if _, err := js.PublishMsg(ctx, m); err == nil {
					t.Errorf("publish to %s with Nats-Rollup: %s = nil error; want it refused", m.Subject, rollup)
				}
			}
			info, err := stream.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if info.State.Msgs != 3 {
				t.Errorf("%s holds %d records after the rollups; want the 3 stored before", tt.stream, info.State.Msgs)
			}
		})
	}
}

// TestTopologyRaw: TURN_RAW keeps frames as long as chunks unless told
// otherwise, serves direct gets, republishes nothing, and rolls up only
// its fence markers' subjects; of the other streams only the fenced ones
// allow a rollup.
func TestTopologyRaw(t *testing.T) {
	byName := func(topo bus.Topology) map[string]jetstream.StreamConfig {
		out := map[string]jetstream.StreamConfig{}
		for _, cfg := range topo.Streams() {
			out[cfg.Name] = cfg
		}
		return out
	}
	def := byName(bus.Topology{})
	raw, ok := def[wire.StreamRaw]
	if !ok {
		t.Fatalf("Streams() has no %s", wire.StreamRaw)
	}
	if raw.Retention != jetstream.LimitsPolicy || raw.MaxAge != time.Hour || !raw.AllowDirect || raw.RePublish != nil ||
		!reflect.DeepEqual(raw.Subjects, []string{"turn.raw.>"}) || raw.Duplicates != def[wire.StreamChunks].Duplicates {
		t.Errorf("%s = %+v; want limits retention, 1h, direct gets, no republish, on turn.raw.>, the chunks' duplicate window", wire.StreamRaw, raw)
	}
	if got := byName(bus.Topology{ChunkMaxAge: 3 * time.Hour})[wire.StreamRaw].MaxAge; got != 3*time.Hour {
		t.Errorf("%s max age with ChunkMaxAge 3h = %v; want 3h", wire.StreamRaw, got)
	}
	if got := byName(bus.Topology{ChunkMaxAge: 3 * time.Hour, RawMaxAge: 10 * time.Minute})[wire.StreamRaw].MaxAge; got != 10*time.Minute {
		t.Errorf("%s max age with RawMaxAge 10m = %v; want 10m", wire.StreamRaw, got)
	}
	fenced := map[string]bool{}
	for _, kind := range bus.FencedKinds {
		fenced[strings.TrimSuffix(bus.FenceSubject(wire.Subjects{}, kind, "x"), ".=fence.x")+".>"] = true
	}
	for name, cfg := range def {
		if want := fenced[cfg.Subjects[0]]; cfg.AllowRollup != want {
			t.Errorf("%s AllowRollup = %v; want %v (only the fenced streams roll up)", name, cfg.AllowRollup, want)
		}
	}
	if len(fenced) != 4 || !fenced["turn.raw.>"] {
		t.Errorf("fenced streams = %v; want messages, chunks, raw and events", fenced)
	}
}

// TestOpenStoresAreCapped: the stores other roles write into (requests,
// tool results, claims, dead letters) are each capped, so a client or a
// tool worker flooding one cannot fill the account's storage the session
// logs share. A full submit queue and claims bucket refuse writes; results
// and dead letters drop their oldest. A session-log append works after
// every flood.
func TestOpenStoresAreCapped(t *testing.T) {
	srv := natstest.Start(t)
	_, js := srv.JetStream()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	const limit = 64 << 10
	topo := bus.Topology{OpenMaxBytes: limit}
	if err := topo.Ensure(ctx, js); err != nil {
		t.Fatalf("Ensure() = %v", err)
	}
	// A second Ensure finds the caps in place (no needless update).
	if err := topo.Ensure(ctx, js); err != nil {
		t.Fatalf("second Ensure() = %v", err)
	}
	s := wire.Subjects{}
	junk := []byte(strings.Repeat("x", 4<<10))
	kv, err := js.KeyValue(ctx, bus.ClaimsBucket)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		stream  string
		refuses bool
		write   func(i int) error
	}{
		{wire.StreamSubmit, true, func(i int) error { _, err := js.Publish(ctx, s.Submit("flood"), junk); return err }},
		{wire.StreamResults, false, func(i int) error { _, err := js.Publish(ctx, s.Result("flood"), junk); return err }},
		{wire.StreamDead, false, func(i int) error { _, err := js.Publish(ctx, s.Dead("flood"), junk); return err }},
		{"KV_" + bus.ClaimsBucket, true, func(i int) error {
			_, err := kv.Create(ctx, bus.ClaimKey("flood", "s", "t", fmt.Sprint(i)), junk)
			return err
		}},
	} {
		t.Run(tt.stream, func(t *testing.T) {
			refused := 0
			for i := range 4 * limit / len(junk) {
				if err := tt.write(i); err != nil {
					if !tt.refuses {
						t.Fatalf("write %d: %v", i, err)
					}
					refused++
				}
			}
			if tt.refuses && refused == 0 {
				t.Errorf("%s took 4 times its cap", tt.stream)
			}
			st, err := js.Stream(ctx, tt.stream)
			if err != nil {
				t.Fatal(err)
			}
			if b := st.CachedInfo().State.Bytes; b > limit {
				t.Errorf("%s holds %d bytes; want at most its cap %d", tt.stream, b, limit)
			}
			if _, err := js.Publish(ctx, s.Message("after-flood"), []byte(`{}`)); err != nil {
				t.Errorf("session-log append after the flood: %v", err)
			}
		})
	}
}

// TestWorkerConsumerUncapped: whatever the topology, the shared worker
// consumer caps no deliveries (workers count them in the session lease),
// so no ensure, the worker's or another's, can cap it.
func TestWorkerConsumerUncapped(t *testing.T) {
	for _, topo := range []bus.Topology{
		{},
		{AckWait: 45 * time.Second, ToolTimeout: 10 * time.Minute, Replicas: 3},
	} {
		if got := topo.WorkerConsumerConfig().MaxDeliver; got != -1 {
			t.Errorf("%+v.WorkerConsumerConfig().MaxDeliver = %d; want -1", topo, got)
		}
	}
}

// TestDuplicateWindow: by default the dedupe window covers a redelivered
// tool call (twice the tool timeout and ack wait), and is at least
// DefaultDuplicateWindow; a configured one wins.
func TestDuplicateWindow(t *testing.T) {
	for _, tt := range []struct {
		name string
		topo bus.Topology
		want time.Duration
	}{
		{"zero", bus.Topology{}, bus.DefaultDuplicateWindow},
		{"short tool timeout", bus.Topology{ToolTimeout: time.Minute}, bus.DefaultDuplicateWindow},
		{"long tool timeout", bus.Topology{ToolTimeout: 10 * time.Minute, AckWait: 45 * time.Second}, 2 * (10*time.Minute + 45*time.Second)},
		{"configured", bus.Topology{ToolTimeout: 10 * time.Minute, DuplicateWindow: time.Minute}, time.Minute},
	} {
		t.Run(tt.name, func(t *testing.T) {
			i := slices.IndexFunc(tt.topo.Streams(), func(c jetstream.StreamConfig) bool { return c.Name == wire.StreamSubmit })
			if i < 0 {
				t.Fatalf("Streams() has no %s", wire.StreamSubmit)
			}
			if got := tt.topo.Streams()[i].Duplicates; got != tt.want {
				t.Errorf("%s duplicate window = %v; want %v", wire.StreamSubmit, got, tt.want)
			}
		})
	}
}

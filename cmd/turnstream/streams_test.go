package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/internal/worker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// streamsConfig is the least a worker starts with; extra is appended.
const streamsConfig = `providers: [{name: p, api: openai_chat_completions, base_url: "http://127.0.0.1:1/v1"}]
models: [{provider: p, name: m}]
routes: [{name: default, targets: [{provider: p, model: m}]}]
`

// topologyState is every stream (buckets included) and consumer on a
// server, as the server reports their configurations.
type topologyState struct {
	streams   map[string]jetstream.StreamConfig
	consumers map[string]jetstream.ConsumerConfig // by "<stream>/<consumer>"
}

func readTopology(ctx context.Context, t *testing.T, js jetstream.JetStream) topologyState {
	t.Helper()
	st := topologyState{streams: map[string]jetstream.StreamConfig{}, consumers: map[string]jetstream.ConsumerConfig{}}
	names := js.StreamNames(ctx)
	for name := range names.Name() {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatalf("Stream(%s) = %v", name, err)
		}
		st.streams[name] = s.CachedInfo().Config
		cons := s.ListConsumers(ctx)
		for info := range cons.Info() {
			st.consumers[name+"/"+info.Name] = info.Config
		}
		if err := cons.Err(); err != nil {
			t.Fatalf("ListConsumers(%s) = %v", name, err)
		}
	}
	if err := names.Err(); err != nil {
		t.Fatalf("StreamNames() = %v", err)
	}
	return st
}

// diff says how other differs from st, one line for each stream or
// consumer.
func (st topologyState) diff(other topologyState) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(st.streams)) {
		if got, want := other.streams[name], st.streams[name]; !reflect.DeepEqual(got, want) {
			out = append(out, fmt.Sprintf("stream %s =\n%+v\nwant, as the worker made it,\n%+v", name, got, want))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(st.consumers)) {
		if got, want := other.consumers[name], st.consumers[name]; !reflect.DeepEqual(got, want) {
			out = append(out, fmt.Sprintf("consumer %s =\n%+v\nwant, as the worker made it,\n%+v", name, got, want))
		}
	}
	if len(other.streams) != len(st.streams) || len(other.consumers) != len(st.consumers) {
		out = append(out, fmt.Sprintf("%d streams and %d consumers; want %d and %d, as the worker made them",
			len(other.streams), len(other.consumers), len(st.streams), len(st.consumers)))
	}
	return out
}

// TestStreamsKeepsWorkerTopology: `turnstream streams` ensures the
// topology the worker ensures at start, from the same config: run between
// two worker starts it changes nothing. The shared worker consumer stays
// uncapped (the worker counts deliveries itself; a server cap would leave
// a request at its last delivery in the work queue, blocking its session),
// and every stream, bucket and consumer is configured the same whichever
// ran last.
func TestStreamsKeepsWorkerTopology(t *testing.T) {
	for _, tt := range []struct {
		name  string
		extra string // appended to the worker's config; "" runs streams without --config
	}{
		{name: "defaults"},
		{name: "configured", extra: `worker: {ack_wait: 45s, max_deliver: 3, tool_timeout: 10m, tool_ack_wait: 2s}
nats: {prefix: acme.turn, replicas: 1}
`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := natstest.Start(t)
			nc, js := srv.JetStream()
			ctx, cancel := context.WithTimeout(t.Context(), cmdWait)
			defer cancel()
			cfg, err := config.Parse([]byte(streamsConfig + tt.extra))
			if err != nil {
				t.Fatalf("config.Parse() = %v", err)
			}
			streamsArgs := []string{"--nats-url", srv.URL()}
			if tt.extra != "" {
				path := filepath.Join(t.TempDir(), "worker.yaml")
				if err := os.WriteFile(path, []byte(streamsConfig+tt.extra), 0o600); err != nil {
					t.Fatal(err)
				}
				streamsArgs = append(streamsArgs, "--config", path)
			}
			startWorker := func() {
				t.Helper()
				if _, err := worker.New(ctx, worker.Options{Conn: nc, Config: cfg}); err != nil {
					t.Fatalf("worker.New() = %v", err)
				}
			}

			startWorker()
			first := readTopology(ctx, t, js)
			if err := dispatch(ctx, append([]string{"streams"}, streamsArgs...), io.Discard); err != nil {
				t.Fatalf("streams: %v", err)
			}
			afterStreams := readTopology(ctx, t, js)
			startWorker()
			last := readTopology(ctx, t, js)

			workers := wire.StreamSubmit + "/" + bus.WorkerConsumer
			for _, step := range []struct {
				name string
				st   topologyState
			}{{"worker", first}, {"worker, streams", afterStreams}, {"worker, streams, worker", last}} {
				c, ok := step.st.consumers[workers]
				if !ok {
					t.Fatalf("after %s: no consumer %s", step.name, workers)
				}
				if c.MaxDeliver != -1 {
					t.Errorf("after %s: %s MaxDeliver = %d; want -1 (uncapped, as the worker sets it)", step.name, workers, c.MaxDeliver)
				}
			}
			if len(first.streams) != 10 {
				t.Errorf("worker ensured %d streams and buckets; want 10", len(first.streams))
			}
			for _, step := range []struct {
				name string
				st   topologyState
			}{{"worker, streams", afterStreams}, {"worker, streams, worker", last}} {
				for _, d := range first.diff(step.st) {
					t.Errorf("after %s: %s", step.name, d)
				}
			}
		})
	}
}

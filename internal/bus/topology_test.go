package bus_test

import (
	"context"
	"fmt"
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

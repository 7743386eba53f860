package deploy

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestPermissions starts a server from nats-server.conf and exercises each
// role against it: what a role needs works, and what it must not do is
// refused by the server (a permissions violation) and has no effect.
func TestPermissions(t *testing.T) {
	setPasswords(t)
	srv := startServer(t, loadConfig(t, serverConf))
	url := srv.ClientURL()

	// The worker creates the topology, as every worker does at start.
	worker := connect(t, url, "worker")
	wjs, err := jetstream.New(worker.Conn)
	if err != nil {
		t.Fatalf("jetstream.New() = %v", err)
	}
	topo := bus.Topology{}
	if err := topo.Ensure(ctxFor(t), wjs); err != nil {
		t.Fatalf("worker: Topology.Ensure() = %v", err)
	}

	t.Run("worker", func(t *testing.T) {
		ctx := ctxFor(t)
		for _, cfg := range topo.Streams() {
			if _, err := wjs.Stream(ctx, cfg.Name); err != nil {
				t.Errorf("worker: stream %s: %v", cfg.Name, err)
			}
		}
		// Ensure again: the update path of a running deployment.
		if err := topo.Ensure(ctx, wjs); err != nil {
			t.Errorf("worker: second Topology.Ensure() = %v", err)
		}
		// Publish on every subject kind of the topology, stored and acked.
		for _, subject := range []string{
			"turn.submit.perm", "turn.chunk.perm.t1", "turn.raw.perm.t1", "turn.message.perm", "turn.event.perm",
			"turn.tool.get_time", "turn.result.perm", "turn.dead.perm",
		} {
			if _, err := wjs.Publish(ctx, subject, []byte(`{}`)); err != nil {
				t.Errorf("worker: publish %s: %v", subject, err)
			}
		}
		if err := worker.Publish("turn.cancel.perm", []byte(`{}`)); err != nil {
			t.Errorf("worker: publish turn.cancel.perm: %v", err)
		}
		if _, err := topo.EnsureToolConsumer(ctx, wjs, "anything"); err != nil {
			t.Errorf("worker: tool consumer: %v", err)
		}
		// The provider's raw frames are the workers' (and operators') to
		// read: by direct get, and with an ordered consumer (the replay
		// adapter's Load).
		readOne(t, wjs, wire.StreamRaw, "turn.raw.perm.t1")
		raw, err := wjs.Stream(ctx, wire.StreamRaw)
		if err != nil {
			t.Fatalf("worker: stream %s: %v", wire.StreamRaw, err)
		}
		rc, err := raw.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"turn.raw.perm.t1"}})
		if err != nil {
			t.Fatalf("worker: ordered consumer on %s: %v", wire.StreamRaw, err)
		}
		if _, err := rc.Next(jetstream.FetchMaxWait(wait)); err != nil {
			t.Errorf("worker: read %s with an ordered consumer: %v", wire.StreamRaw, err)
		}
		// The worker-only state bucket: write and read.
		wb, err := bus.New(ctx, wjs, wire.Subjects{})
		if err != nil {
			t.Fatalf("worker: bus.New() = %v", err)
		}
		state, err := wb.State(ctx)
		if err != nil {
			t.Fatalf("worker: state bucket: %v", err)
		}
		if err := state.Put(ctx, "perm.t1.1", []byte(`{"v":1}`)); err != nil {
			t.Errorf("worker: state put: %v", err)
		}
		if _, ok, err := state.Get(ctx, "perm.t1.1"); err != nil || !ok {
			t.Errorf("worker: state get = %v, %v; want the value", ok, err)
		}
		worker.expectNoErrors(t)

		// Deleting or purging streams is an operator's task.
		if err := wjs.DeleteStream(shortCtx(t), wire.StreamMessages); err == nil {
			t.Error("worker: DeleteStream(TURN_MESSAGES) = nil error; want refused")
		}
		worker.expectViolation(t, "Publish", "$JS.API.STREAM.DELETE.TURN_MESSAGES")
		// Nor the durable consumer that holds the work queue's state.
		if err := wjs.DeleteConsumer(shortCtx(t), wire.StreamSubmit, bus.WorkerConsumer); err == nil {
			t.Error("worker: DeleteConsumer(turn-workers) = nil error; want refused")
		}
		worker.expectViolation(t, "Publish", "$JS.API.CONSUMER.DELETE.TURN_SUBMIT.turn-workers")
	})

	t.Run("client", func(t *testing.T) {
		c := connect(t, url, "client")
		ctx := ctxFor(t)
		cl, err := client.New(c.Conn)
		if err != nil {
			t.Fatalf("client.New() = %v", err)
		}
		// Submit: a JetStream publish to TURN_SUBMIT, after subscribing to
		// the turn's live subjects.
		turn, err := cl.Submit(ctx, wire.TurnRequest{
			SessionID: "perm-client", TurnID: "t1",
			Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "hi"}},
		})
		if err != nil {
			t.Fatalf("client: Submit() = %v", err)
		}
		// The worker writes the turn; the client follows it to its end
		// through the live subjects and direct gets, with no consumer.
		for _, r := range []struct {
			subject string
			record  any
		}{
			{"turn.chunk.perm-client.t1", &wire.Chunk{SessionID: "perm-client", TurnID: "t1", Step: 1, Attempt: 1, Seq: 1, Delta: &wire.Delta{Text: "hello"}}},
			{"turn.message.perm-client", &wire.Message{SessionID: "perm-client", TurnID: "t1", Seq: 1, Role: wire.RoleAssistant, Content: "hello"}},
			{"turn.event.perm-client", &wire.SessionEvent{Type: wire.EventTurnCompleted, SessionID: "perm-client", TurnID: "t1"}},
		} {
			data, err := wire.JSON.Marshal(r.record)
			if err != nil {
				t.Fatal(err)
			}
			m := &nats.Msg{Subject: r.subject, Data: data, Header: nats.Header{wire.HeaderContentType: {wire.ContentTypeJSON}}}
			if _, err := wjs.PublishMsg(ctx, m); err != nil {
				t.Fatalf("worker: publish %s: %v", r.subject, err)
			}
		}
		res, err := turn.Wait(ctx)
		if err != nil {
			t.Fatalf("client: Wait() = %v", err)
		}
		if res.Terminal.Type != wire.EventTurnCompleted || res.Chunks != 1 || res.Text != "hello" {
			t.Errorf("client: Wait() = %+v; want the whole turn", res)
		}
		turn.Close()
		// Resuming a finished turn from the start reads it by direct get.
		again, err := cl.Follow(ctx, "perm-client", "t1")
		if err != nil {
			t.Fatalf("client: Follow() = %v", err)
		}
		if res, err := again.Wait(ctx); err != nil || res.Terminal.Type != wire.EventTurnCompleted {
			t.Errorf("client: Follow().Wait() = %+v, %v; want the whole turn", res, err)
		}
		again.Close()
		for _, name := range []string{wire.StreamChunks, wire.StreamMessages, wire.StreamEvents} {
			s, err := wjs.Stream(ctx, name)
			if err != nil {
				t.Fatalf("stream info %s: %v", name, err)
			}
			if n := s.CachedInfo().State.Consumers; n != 0 {
				t.Errorf("consumers on %s after following = %d; want 0", name, n)
			}
		}
		if err := cl.Cancel(ctx, "perm-client", "t1"); err != nil {
			t.Errorf("client: Cancel() = %v", err)
		}

		// Read the event, message and chunk the worker wrote, with direct
		// gets: the follow contract needs no consumer, and the client may
		// create none.
		cjs, err := jetstream.New(c.Conn)
		if err != nil {
			t.Fatalf("jetstream.New() = %v", err)
		}
		for _, r := range []struct{ stream, subject string }{
			{wire.StreamEvents, "turn.event.perm"},
			{wire.StreamMessages, "turn.message.perm"},
			{wire.StreamChunks, "turn.chunk.perm.t1"},
		} {
			readOne(t, cjs, r.stream, r.subject)
		}
		c.expectNoErrors(t)

		// Writing a session log is the workers' alone.
		if _, err := cjs.Publish(shortCtx(t), "turn.message.x", []byte(`{"role":"assistant"}`)); err == nil {
			t.Error("client: publish turn.message.x = nil error; want refused")
		}
		c.expectViolation(t, "Publish", "turn.message.x")
		expectNoRecord(t, wjs, wire.StreamMessages, "turn.message.x")

		// Provider state (replay echo, provider ids) is the workers' alone.
		if _, err := cjs.Publish(shortCtx(t), "$KV.TURN_STATE.perm.t1.1", []byte(`{}`)); err == nil {
			t.Error("client: write to the state bucket = nil error; want refused")
		}
		c.expectViolation(t, "Publish", "$KV.TURN_STATE.perm.t1.1")
		if _, err := cjs.KeyValue(shortCtx(t), bus.StateBucket); err == nil {
			t.Error("client: open the state bucket = nil error; want refused")
		}
		c.expectViolation(t, "Publish", "$JS.API.STREAM.INFO.KV_TURN_STATE")

		// The provider's raw frames (reasoning, whatever a model wrote) are
		// not the client's to read: no stream info, no direct get, no
		// subscription.
		if _, err := cjs.Stream(shortCtx(t), wire.StreamRaw); err == nil {
			t.Error("client: stream info TURN_RAW = nil error; want refused")
		}
		c.expectViolation(t, "Publish", "$JS.API.STREAM.INFO.TURN_RAW")
		if err := c.PublishRequest("$JS.API.DIRECT.GET.TURN_RAW", c.NewRespInbox(), []byte(`{"last_by_subj":"turn.raw.perm.t1"}`)); err != nil {
			t.Fatalf("client: direct get request: %v", err)
		}
		c.expectViolation(t, "Publish", "$JS.API.DIRECT.GET.TURN_RAW")
		if err := c.PublishRequest("$JS.API.DIRECT.GET.TURN_RAW.turn.raw.perm.t1", c.NewRespInbox(), nil); err != nil {
			t.Fatalf("client: direct get request: %v", err)
		}
		c.expectViolation(t, "Publish", "$JS.API.DIRECT.GET.TURN_RAW.turn.raw.perm.t1")
		if _, err := c.SubscribeSync("turn.raw.>"); err != nil {
			t.Fatalf("client: subscribe: %v", err)
		}
		c.expectViolation(t, "Subscription", "turn.raw.>")

		// No other record is the client's to write, nor a live record
		// followers would take as stored.
		for _, subject := range []string{"turn.chunk.x.t1", "turn.raw.x.t1", "turn.event.x", "turn.tool.get_time", "turn.result.x", "turn.dead.x", "turn.live.event.x"} {
			if err := c.Publish(subject, []byte(`{}`)); err != nil {
				t.Fatalf("client: publish %s: %v", subject, err)
			}
			c.expectViolation(t, "Publish", subject)
		}

		// No consumer on the work queue of turn requests: reading them is
		// the workers' job.
		_, err = cjs.CreateConsumer(shortCtx(t), wire.StreamSubmit, jetstream.ConsumerConfig{
			Name: "thief", FilterSubject: "turn.submit.>", AckPolicy: jetstream.AckExplicitPolicy,
		})
		if err == nil {
			t.Error("client: CreateConsumer(TURN_SUBMIT) = nil error; want refused")
		}
		c.expectViolation(t, "Publish", "$JS.API.CONSUMER.CREATE.TURN_SUBMIT.thief.turn.submit.>")
		if _, err := wjs.Consumer(ctxFor(t), wire.StreamSubmit, "thief"); !errors.Is(err, jetstream.ErrConsumerNotFound) {
			t.Errorf("consumer thief on TURN_SUBMIT: %v; want ErrConsumerNotFound", err)
		}

		// No stream management.
		if _, err := cjs.CreateStream(shortCtx(t), jetstream.StreamConfig{Name: "EVIL", Subjects: []string{"evil.>"}}); err == nil {
			t.Error("client: CreateStream(EVIL) = nil error; want refused")
		}
		c.expectViolation(t, "Publish", "$JS.API.STREAM.CREATE.EVIL")

		// Tool calls are not the client's to read.
		if _, err := c.SubscribeSync("turn.tool.>"); err != nil {
			t.Fatalf("client: subscribe: %v", err)
		}
		c.expectViolation(t, "Subscription", "turn.tool.>")
	})

	t.Run("toolworker", func(t *testing.T) {
		tw := connect(t, url, "toolworker")
		tjs, err := jetstream.New(tw.Conn)
		if err != nil {
			t.Fatalf("jetstream.New() = %v", err)
		}
		ctx := ctxFor(t)
		if _, err := tjs.Stream(ctx, wire.StreamTools); err != nil {
			t.Fatalf("toolworker: stream info TURN_TOOLS: %v", err)
		}
		cons, err := topo.EnsureToolConsumer(ctx, tjs, "get_time")
		if err != nil {
			t.Fatalf("toolworker: EnsureToolConsumer(get_time) = %v", err)
		}
		// The worker published one call on turn.tool.get_time above.
		m, err := cons.Next(jetstream.FetchMaxWait(wait))
		if err != nil {
			t.Fatalf("toolworker: fetch a call: %v", err)
		}
		if _, err := tjs.Publish(ctx, "turn.result.perm", []byte(`{}`), jetstream.WithMsgID("result:perm")); err != nil {
			t.Errorf("toolworker: publish result: %v", err)
		}
		if err := m.DoubleAck(ctx); err != nil {
			t.Errorf("toolworker: ack the call: %v", err)
		}
		tw.expectNoErrors(t)

		if _, err := tjs.Publish(shortCtx(t), "turn.message.x", []byte(`{}`)); err == nil {
			t.Error("toolworker: publish turn.message.x = nil error; want refused")
		}
		tw.expectViolation(t, "Publish", "turn.message.x")
		expectNoRecord(t, wjs, wire.StreamMessages, "turn.message.x")

		for _, subject := range []string{"turn.submit.x", "turn.tool.calculate", "turn.event.x", "turn.chunk.x.t1", "turn.raw.x.t1"} {
			if err := tw.Publish(subject, []byte(`{}`)); err != nil {
				t.Fatalf("toolworker: publish %s: %v", subject, err)
			}
			tw.expectViolation(t, "Publish", subject)
		}
		// Only the listed tools: a consumer for another one is refused.
		if _, err := topo.EnsureToolConsumer(shortCtx(t), tjs, "other"); err == nil {
			t.Error("toolworker: EnsureToolConsumer(other) = nil error; want refused")
		}
		tw.expectViolation(t, "Publish", "$JS.API.CONSUMER.CREATE.TURN_TOOLS.tool-other.turn.tool.other")
		if _, err := tw.SubscribeSync("turn.message.>"); err != nil {
			t.Fatalf("toolworker: subscribe: %v", err)
		}
		tw.expectViolation(t, "Subscription", "turn.message.>")
	})

	t.Run("auditor", func(t *testing.T) {
		a := connect(t, url, "auditor")
		ajs, err := jetstream.New(a.Conn)
		if err != nil {
			t.Fatalf("jetstream.New() = %v", err)
		}
		readOne(t, ajs, wire.StreamEvents, "turn.event.perm")
		live, err := a.SubscribeSync("turn.event.>")
		if err != nil {
			t.Fatalf("auditor: subscribe turn.event.>: %v", err)
		}
		a.expectNoErrors(t)
		if _, err := wjs.Publish(ctxFor(t), "turn.event.live", []byte(`{}`)); err != nil {
			t.Fatalf("worker: publish event: %v", err)
		}
		if _, err := live.NextMsg(wait); err != nil {
			t.Errorf("auditor: live event: %v", err)
		}

		for _, subject := range []string{"turn.submit.x", "turn.cancel.x", "turn.message.x", "turn.event.x"} {
			if err := a.Publish(subject, []byte(`{}`)); err != nil {
				t.Fatalf("auditor: publish %s: %v", subject, err)
			}
			a.expectViolation(t, "Publish", subject)
		}
		if _, err := ajs.Stream(shortCtx(t), wire.StreamMessages); err == nil {
			t.Error("auditor: stream info TURN_MESSAGES = nil error; want refused")
		}
		a.expectViolation(t, "Publish", "$JS.API.STREAM.INFO.TURN_MESSAGES")
		if _, err := a.SubscribeSync("turn.message.>"); err != nil {
			t.Fatalf("auditor: subscribe: %v", err)
		}
		a.expectViolation(t, "Subscription", "turn.message.>")
	})
}

// readOne reads the first record of subject from stream, with an ordered
// consumer iterated as pkg/client and `turnstream tap` do, and with a direct
// get of the last record.
func readOne(t *testing.T, js jetstream.JetStream, stream, subject string) {
	t.Helper()
	ctx := ctxFor(t)
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatalf("stream info %s: %v", stream, err)
	}
	m, err := s.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(subject))
	if err != nil {
		t.Fatalf("direct get of the first record of %s: %v", subject, err)
	}
	if m.Subject != subject {
		t.Errorf("read %s: got a record of %s", subject, m.Subject)
	}
	if _, err := s.GetLastMsgForSubject(ctx, subject); err != nil {
		t.Errorf("direct get of the last record of %s: %v", subject, err)
	}
}

// expectNoRecord fails if stream holds a record on subject.
func expectNoRecord(t *testing.T, js jetstream.JetStream, stream, subject string) {
	t.Helper()
	s, err := js.Stream(ctxFor(t), stream)
	if err != nil {
		t.Fatalf("stream info %s: %v", stream, err)
	}
	if _, err := s.GetLastMsgForSubject(ctxFor(t), subject); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Errorf("last record of %s in %s: %v; want ErrMsgNotFound (nothing stored)", subject, stream, err)
	}
}

// TestConsumerLimit checks that the account lifts the server's default of
// 1000 consumers per stream for the readers that hold one: a worker reads
// each session log and each turn's tool results with an ordered consumer
// until it stops. Clients hold none (the follow contract) and may create
// none.
func TestConsumerLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 1500 consumers")
	}
	setPasswords(t)
	srv := startServer(t, loadConfig(t, serverConf))
	worker := connect(t, srv.ClientURL(), "worker")
	wjs, err := jetstream.New(worker.Conn)
	if err != nil {
		t.Fatal(err)
	}
	if err := (bus.Topology{}).Ensure(ctxFor(t), wjs); err != nil {
		t.Fatalf("worker: Topology.Ensure() = %v", err)
	}
	ctx := ctxFor(t)
	const n = 1500
	for i := range n {
		// What a worker's session-log reader creates.
		_, err := wjs.CreateConsumer(ctx, wire.StreamMessages, jetstream.ConsumerConfig{
			Name:              fmt.Sprintf("reader_%d", i),
			FilterSubject:     fmt.Sprintf("turn.message.s%d", i),
			AckPolicy:         jetstream.AckNonePolicy,
			MemoryStorage:     true,
			InactiveThreshold: 30 * time.Second,
		})
		if err != nil {
			t.Fatalf("worker: consumer %d of %d on %s: %v", i+1, n, wire.StreamMessages, err)
		}
	}
	if err := wjs.DeleteConsumer(ctx, wire.StreamMessages, "reader_0"); err != nil {
		t.Errorf("worker: DeleteConsumer() = %v", err)
	}
	worker.expectNoErrors(t)

	c := connect(t, srv.ClientURL(), "client")
	cjs, err := jetstream.New(c.Conn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cjs.CreateConsumer(shortCtx(t), wire.StreamEvents, jetstream.ConsumerConfig{Name: "c", AckPolicy: jetstream.AckNonePolicy}); err == nil {
		t.Error("client: CreateConsumer() = nil error; want refused: followers need no consumer")
	}
}

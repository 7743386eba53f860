package deploy

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/discovery"
	"github.com/turnstream/turnstream/pkg/wire"
)

// The permission matrix: every role, connected as its user to a server
// started from nats-server.conf, tries what it needs (which must work) and
// what it must not do (which the server must refuse, with no effect):
// reading other roles' replies, writing records directly or through a
// reply subject, reaching the worker-only state and raw provider bytes,
// creating or re-pointing consumers, managing streams. The table it logs
// (attempts, allowed, denied per user) is the matrix of deploy/README.md.

// want is what an attempt must come to.
type want int

const (
	allowed want = iota
	denied
)

// attempt is one action of one user.
type attempt struct {
	user string
	what string
	want want
	// try performs the action and reports whether it took effect (a reply,
	// a record stored or received), with what was seen.
	try func(t *testing.T, m *matrix) (took bool, seen string)
}

// matrix is the server, the users' connections and the records the
// attempts need.
type matrix struct {
	url   string
	conns map[string]*conn
	js    map[string]jetstream.JetStream
	topo  bus.Topology
	// op is the operator's JetStream: it checks what the attempts stored.
	op jetstream.JetStream
	// wrote counts, negatively, the records the test itself stored per
	// stream after the first snapshot.
	wrote map[string]uint64
}

func (m *matrix) conn(user string) *conn { return m.conns[user] }

// denyWait bounds the wait for a refusal; it is reached only when an
// attempt that must be refused was not.
const denyWait = 15 * time.Second

// violated waits until the server has refused op ("Publish" or
// "Subscription") on subject for c, or denyWait passes.
func (c *conn) violated(op, subject string) bool {
	deadline := time.Now().Add(denyWait)
	for !c.errs.violation(op, subject) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// trySub subscribes c to subject and reports whether the server kept the
// subscription.
func trySub(c *conn, subject string) (bool, string) {
	sub, err := c.SubscribeSync(subject)
	if err != nil {
		return false, err.Error()
	}
	defer sub.Unsubscribe()
	if err := c.FlushTimeout(wait); err != nil {
		return false, err.Error()
	}
	if c.violated("Subscription", subject) {
		return false, "permissions violation"
	}
	return true, "subscribed"
}

// tryPub publishes on subject (core NATS) and reports whether the server
// took it.
func tryPub(c *conn, subject string, h nats.Header) (bool, string) {
	if err := c.PublishMsg(&nats.Msg{Subject: subject, Header: h, Data: []byte(`{"forged":true}`)}); err != nil {
		return false, err.Error()
	}
	if err := c.FlushTimeout(wait); err != nil {
		return false, err.Error()
	}
	if c.violated("Publish", subject) {
		return false, "permissions violation"
	}
	return true, "published"
}

// tryReq sends a request with the given reply subject (a fresh inbox of c
// when empty) and reports whether a successful answer came back: a
// refusal, no responders or a JetStream API error is no effect.
func tryReq(c *conn, subject, reply string, h nats.Header, data []byte) (bool, string) {
	inbox := c.NewRespInbox()
	if reply == "" {
		reply = inbox
	}
	sub, err := c.SubscribeSync(inbox)
	if err != nil {
		return false, err.Error()
	}
	defer sub.Unsubscribe()
	if err := c.PublishMsg(&nats.Msg{Subject: subject, Reply: reply, Header: h, Data: data}); err != nil {
		return false, err.Error()
	}
	if err := c.FlushTimeout(wait); err != nil {
		return false, err.Error()
	}
	deadline := time.Now().Add(denyWait)
	for time.Now().Before(deadline) {
		if c.errs.violation("Publish", subject) {
			return false, "permissions violation"
		}
		if reply != inbox {
			// Answered elsewhere: the caller checks where it landed.
			time.Sleep(100 * time.Millisecond)
			return false, "reply sent to " + reply
		}
		r, err := sub.NextMsg(10 * time.Millisecond)
		if errors.Is(err, nats.ErrTimeout) {
			continue
		}
		if err != nil {
			return false, err.Error()
		}
		if r.Header.Get("Status") == "503" {
			return false, "no responders"
		}
		if strings.Contains(string(r.Data), `"error"`) {
			return false, "API error: " + string(r.Data)
		}
		return true, "answered"
	}
	return false, "no answer"
}

// jsAPI is a request to the JetStream API with a JSON body.
func jsAPI(user, subject, body string) func(*testing.T, *matrix) (bool, string) {
	return func(_ *testing.T, m *matrix) (bool, string) {
		return tryReq(m.conn(user), subject, "", nil, []byte(body))
	}
}

func sub(user, subject string) func(*testing.T, *matrix) (bool, string) {
	return func(_ *testing.T, m *matrix) (bool, string) { return trySub(m.conn(user), subject) }
}

func pub(user, subject string) func(*testing.T, *matrix) (bool, string) {
	return func(_ *testing.T, m *matrix) (bool, string) { return tryPub(m.conn(user), subject, nil) }
}

// services sends a request on subject as user and returns the names of
// the NATS services that answered within a moment (as `nats micro ls`
// gathers them), or why none did.
func services(c *conn, subject string) ([]string, string) {
	inbox := c.NewRespInbox()
	sub, err := c.SubscribeSync(inbox)
	if err != nil {
		return nil, err.Error()
	}
	defer sub.Unsubscribe()
	if err := c.PublishRequest(subject, inbox, nil); err != nil {
		return nil, err.Error()
	}
	if err := c.FlushTimeout(wait); err != nil {
		return nil, err.Error()
	}
	var names []string
	for {
		r, err := sub.NextMsg(500 * time.Millisecond)
		if err != nil {
			break
		}
		var p struct{ Name string }
		if json.Unmarshal(r.Data, &p) == nil && p.Name != "" {
			names = append(names, p.Name)
		}
	}
	if len(names) == 0 {
		if c.errs.violation("Publish", subject) {
			return nil, "permissions violation"
		}
		return nil, "no answer"
	}
	slices.Sort(names)
	return names, "answered by " + strings.Join(names, ", ")
}

// pingedBy is an attempt of user to PING every NATS service; it takes
// effect when any answers, and is refused unless exactly want do.
func pingedBy(user string, want ...string) func(*testing.T, *matrix) (bool, string) {
	return func(_ *testing.T, m *matrix) (bool, string) {
		names, seen := services(m.conn(user), "$SRV.PING")
		if len(want) > 0 && !slices.Equal(names, want) {
			return false, seen
		}
		return len(names) > 0, seen
	}
}

// stored reports whether stream holds a record on subject.
func (m *matrix) stored(t *testing.T, stream, subject string) bool {
	t.Helper()
	s, err := m.op.Stream(ctxFor(t), stream)
	if err != nil {
		t.Fatalf("operator: stream %s: %v", stream, err)
	}
	_, err = s.GetLastMsgForSubject(ctxFor(t), subject)
	if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Fatalf("operator: last record of %s in %s: %v", subject, stream, err)
	}
	return err == nil
}

// replyTrick sends a request the user may send, with a reply subject of a
// stream the user must not write, and reports whether the answer was
// stored there.
func replyTrick(user, subject, replyTo, stream string, h nats.Header) func(*testing.T, *matrix) (bool, string) {
	return func(t *testing.T, m *matrix) (bool, string) {
		tryReq(m.conn(user), subject, replyTo, h, []byte(`{}`))
		if m.stored(t, stream, replyTo) {
			return true, "the answer was stored in " + stream
		}
		return false, "nothing stored in " + stream
	}
}

// snapshot is, per stream and bucket, its last sequence and consumer
// count, and the consumers of the tool work queue with their settings.
func (m *matrix) snapshot(t *testing.T) map[string]string {
	t.Helper()
	ctx := ctxFor(t)
	out := map[string]string{}
	for info := range m.op.ListStreams(ctx).Info() {
		out[info.Config.Name] = fmt.Sprintf("last=%d consumers=%d", info.State.LastSeq+m.wrote[info.Config.Name], info.State.Consumers)
	}
	tools, err := m.op.Stream(ctx, wire.StreamTools)
	if err != nil {
		t.Fatal(err)
	}
	for c := range tools.ListConsumers(ctx).Info() {
		out["consumer "+c.Name] = fmt.Sprintf("filter=%s ack_wait=%s ack=%s deliver=%q", c.Config.FilterSubject, c.Config.AckWait, c.Config.AckPolicy, c.Config.DeliverSubject)
	}
	return out
}

// publish stores a record as the worker, counted so that the snapshots
// tell the attempts' writes from the test's own.
func (m *matrix) publish(t *testing.T, subject string) {
	t.Helper()
	ack, err := m.js["worker"].Publish(ctxFor(t), subject, []byte(`{}`))
	if err != nil {
		t.Fatalf("worker: publish %s: %v", subject, err)
	}
	m.wrote[ack.Stream]--
}

// changed lists what differs between two snapshots, but for the streams
// the allowed attempts write.
func changed(before, after map[string]string, mayWrite ...string) []string {
	var diff []string
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if before[k] != after[k] && !slices.Contains(mayWrite, k) {
			diff = append(diff, fmt.Sprintf("%s: %q -> %q", k, before[k], after[k]))
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			diff = append(diff, k+": gone")
		}
	}
	return diff
}

// TestPermissionMatrix runs every attempt of every role and logs the
// matrix.
func TestPermissionMatrix(t *testing.T) {
	setPasswords(t)
	srv := startServer(t, loadConfig(t, serverConf))
	m := &matrix{url: srv.ClientURL(), conns: map[string]*conn{}, js: map[string]jetstream.JetStream{}, wrote: map[string]uint64{}}
	for _, r := range roles {
		if r.user == "sys" {
			continue
		}
		c := connect(t, m.url, r.user)
		js, err := jetstream.New(c.Conn)
		if err != nil {
			t.Fatal(err)
		}
		m.conns[r.user], m.js[r.user] = c, js
	}
	m.op = m.js["operator"]

	// The worker creates the topology, as every worker does at start, and
	// the consumer of get_time, as at its first call; the records the
	// readers read are in place.
	wjs := m.js["worker"]
	ctx := ctxFor(t)
	if err := m.topo.Ensure(ctx, wjs); err != nil {
		t.Fatalf("worker: Topology.Ensure() = %v", err)
	}
	if _, err := m.topo.EnsureToolConsumer(ctx, wjs, "get_time"); err != nil {
		t.Fatalf("worker: tool consumer: %v", err)
	}
	for _, subject := range []string{"turn.chunk.m.t1", "turn.message.m", "turn.event.m", "turn.result.m", "turn.raw.m.t1"} {
		m.publish(t, subject)
	}
	clear(m.wrote)

	// The worker and the tool worker register their NATS services, as
	// `turnstream worker` and pkg/toolworker.Serve do; every attempt runs
	// with them answering.
	for _, r := range []struct{ user, name, role string }{
		{"worker", discovery.WorkerName, discovery.WorkerRole},
		{"toolworker", discovery.ToolsName, discovery.ToolsRole},
	} {
		svc, err := discovery.Register(m.conn(r.user).Conn, discovery.Spec{Name: r.name, Role: r.role, Config: discovery.ToolsConfig{Prefix: "turn"}})
		if err != nil {
			t.Fatalf("%s: register the %s service: %v", r.user, r.name, err)
		}
		t.Cleanup(func() { svc.Stop() }) //nolint:errcheck // the server stops next
	}

	attempts := slices.Concat(workerAttempts(), clientAttempts(), toolworkerAttempts(), auditorAttempts(), operatorAttempts())

	type tally struct{ attempts, allowed, denied int }
	tallies := map[string]*tally{}
	before := m.snapshot(t)
	for _, a := range attempts {
		if tallies[a.user] == nil {
			tallies[a.user] = &tally{}
		}
		tl := tallies[a.user]
		tl.attempts++
		start := time.Now()
		took, seen := a.try(t, m)
		if d := time.Since(start); d > 2*time.Second {
			t.Logf("%s: %s: took %s (%s)", a.user, a.what, d.Round(time.Millisecond), seen)
		}
		if took {
			tl.allowed++
		} else {
			tl.denied++
		}
		switch {
		case a.want == allowed && !took:
			t.Errorf("%s: %s: refused (%s); want allowed", a.user, a.what, seen)
		case a.want == denied && took:
			t.Errorf("%s: %s: took effect (%s); want refused", a.user, a.what, seen)
		}
	}
	// Nothing but what the allowed attempts write changed.
	after := m.snapshot(t)
	if diff := changed(before, after, wire.StreamSubmit, wire.StreamResults, "KV_"+bus.ClaimsBucket); len(diff) > 0 {
		t.Errorf("the attempts changed %v", diff)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "\n%-11s %8s %8s %7s\n", "user", "attempts", "allowed", "denied")
	total := tally{}
	for _, r := range roles {
		tl := tallies[r.user]
		if tl == nil {
			continue
		}
		fmt.Fprintf(&b, "%-11s %8d %8d %7d\n", r.user, tl.attempts, tl.allowed, tl.denied)
		total.attempts += tl.attempts
		total.allowed += tl.allowed
		total.denied += tl.denied
	}
	fmt.Fprintf(&b, "%-11s %8d %8d %7d", "all", total.attempts, total.allowed, total.denied)
	t.Log(b.String())
}

// workerAttempts: workers run turns, but do not manage what holds state
// they cannot rebuild, nor read replies of other users of their account.
func workerAttempts() []attempt {
	const u = "worker"
	return []attempt{
		{u, "stream info of every stream", allowed, func(t *testing.T, m *matrix) (bool, string) {
			for _, cfg := range m.topo.Streams() {
				if _, err := m.js[u].Stream(ctxFor(t), cfg.Name); err != nil {
					return false, err.Error()
				}
			}
			return true, "read"
		}},
		{u, "update the topology again", allowed, func(t *testing.T, m *matrix) (bool, string) {
			if err := m.topo.Ensure(ctxFor(t), m.js[u]); err != nil {
				return false, err.Error()
			}
			return true, "ensured"
		}},
		{u, "delete TURN_MESSAGES", denied, jsAPI(u, "$JS.API.STREAM.DELETE.TURN_MESSAGES", "")},
		{u, "purge TURN_SUBMIT", denied, jsAPI(u, "$JS.API.STREAM.PURGE.TURN_SUBMIT", "")},
		{u, "delete the turn-workers consumer", denied, jsAPI(u, "$JS.API.CONSUMER.DELETE.TURN_SUBMIT.turn-workers", "")},
		{u, "subscribe to every inbox", denied, sub(u, "_INBOX.>")},
		{u, "subscribe to the operator's inbox", denied, sub(u, "_INBOX_operator.>")},
		{u, "subscribe to the answers of imported requests", denied, sub(u, "_R_.>")},

		// Its NATS service: it answers (see the operator's PING), it does
		// not ask.
		{u, "subscribe to the tool workers' service", denied, sub(u, "$SRV.INFO.turnstream-tools")},
		{u, "PING the services", denied, pingedBy(u)},
	}
}

// clientAttempts: clients submit, cancel and follow; nothing else.
func clientAttempts() []attempt {
	const u = "client"
	live := func(subject, stored string) func(*testing.T, *matrix) (bool, string) {
		return func(t *testing.T, m *matrix) (bool, string) {
			s, err := m.conn(u).SubscribeSync(subject)
			if err != nil {
				return false, err.Error()
			}
			defer s.Unsubscribe()
			if err := m.conn(u).FlushTimeout(wait); err != nil {
				return false, err.Error()
			}
			m.publish(t, stored)
			r, err := s.NextMsg(wait)
			if err != nil {
				return false, err.Error()
			}
			if r.Header.Get("Nats-Sequence") == "" {
				return false, "no Nats-Sequence header"
			}
			return true, "received " + r.Subject
		}
	}
	batch := func(stream string) func(*testing.T, *matrix) (bool, string) {
		return jsAPI(u, "$JS.API.DIRECT.GET."+stream, `{"seq":1,"batch":2}`)
	}
	cases := []attempt{
		{u, "submit a turn", allowed, func(t *testing.T, m *matrix) (bool, string) {
			ack, err := m.js[u].Publish(ctxFor(t), "turn.submit.m-client", []byte(`{}`), jetstream.WithMsgID("m-client/t1"))
			if err != nil {
				return false, err.Error()
			}
			return ack.Stream == wire.StreamSubmit, "stored in " + ack.Stream
		}},
		{u, "cancel a turn, answered by the workers", allowed, func(t *testing.T, m *matrix) (bool, string) {
			s, err := m.conn("worker").Subscribe("turn.cancel.m-client", func(msg *nats.Msg) {
				if err := msg.Respond(nil); err != nil {
					t.Errorf("the worker's answer: %v", err)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Unsubscribe()
			if err := m.conn("worker").FlushTimeout(wait); err != nil {
				t.Fatal(err)
			}
			if _, err := m.conn(u).Request("turn.cancel.m-client", []byte(`{"turn_id":"t1"}`), wait); err != nil {
				return false, "no answer from the workers: " + err.Error()
			}
			return true, "received and answered by the workers"
		}},
		{u, "follow chunks live", allowed, live("turn.live.chunk.m.t1", "turn.chunk.m.t1")},
		{u, "follow messages live", allowed, live("turn.live.message.m", "turn.message.m")},
		{u, "follow events live", allowed, live("turn.live.event.m", "turn.event.m")},
		{u, "batch direct get of TURN_CHUNKS", allowed, batch(wire.StreamChunks)},
		{u, "batch direct get of TURN_MESSAGES", allowed, batch(wire.StreamMessages)},
		{u, "batch direct get of TURN_EVENTS", allowed, batch(wire.StreamEvents)},
		{u, "direct get of a session's last message", allowed, jsAPI(u, "$JS.API.DIRECT.GET.TURN_MESSAGES.turn.message.m", "")},
		{u, "leader's get of a chunk", allowed, jsAPI(u, "$JS.API.STREAM.MSG.GET.TURN_CHUNKS", `{"last_by_subj":"turn.chunk.m.t1"}`)},
		{u, "stream info of TURN_EVENTS", allowed, jsAPI(u, "$JS.API.STREAM.INFO.TURN_EVENTS", "")},

		// Other users' replies.
		{u, "subscribe to every inbox", denied, sub(u, "_INBOX.>")},
		{u, "subscribe to the worker's inbox", denied, sub(u, "_INBOX_worker.>")},
		{u, "subscribe to the tool worker's inbox", denied, sub(u, "_INBOX_toolworker.>")},
		{u, "subscribe to the answers of imported requests", denied, sub(u, "_R_.>")},
		{u, "subscribe to everything", denied, sub(u, ">")},
	}
	// The writers' subjects: records a fenced worker wrote would be seen
	// there, and tool calls and results are not the client's.
	for _, s := range []string{"turn.submit.>", "turn.cancel.>", "turn.chunk.>", "turn.raw.>", "turn.message.>", "turn.event.>", "turn.tool.>", "turn.result.>", "$KV.>"} {
		cases = append(cases, attempt{u, "subscribe to " + s, denied, sub(u, s)})
	}
	for _, s := range []string{"turn.message.m", "turn.message.=fence.m", "turn.event.m", "turn.chunk.m.t1", "turn.raw.m.t1", "turn.tool.get_time",
		"turn.result.m", "turn.dead.m", "turn.live.event.m", "$KV.TURN_STATE.m.=lease", "$KV.TURN_CLAIMS.get_time.m.t1.x",
		"$JS.ACK.TURN_SUBMIT.turn-workers.1.1.1.1.0", "$JS.ACK.TURN_TOOLS.tool-get_time.1.1.1.1.0"} {
		cases = append(cases, attempt{u, "publish " + s, denied, pub(u, s)})
	}
	for _, r := range []struct{ what, subject, body string }{
		{"account info", "$JS.API.INFO", ""},
		{"stream info of TURN_RAW", "$JS.API.STREAM.INFO.TURN_RAW", ""},
		{"stream info of TURN_SUBMIT", "$JS.API.STREAM.INFO.TURN_SUBMIT", ""},
		{"stream info of TURN_STATE", "$JS.API.STREAM.INFO.KV_TURN_STATE", ""},
		{"direct get of TURN_RAW", "$JS.API.DIRECT.GET.TURN_RAW", `{"seq":1}`},
		{"direct get of TURN_STATE", "$JS.API.DIRECT.GET.KV_TURN_STATE", `{"seq":1}`},
		{"direct get of TURN_RESULTS", "$JS.API.DIRECT.GET.TURN_RESULTS", `{"seq":1}`},
		{"direct get of TURN_TOOLS", "$JS.API.DIRECT.GET.TURN_TOOLS", `{"seq":1}`},
		{"direct get of a pending request", "$JS.API.DIRECT.GET.TURN_SUBMIT", `{"seq":1}`},
		{"create a stream", "$JS.API.STREAM.CREATE.EVIL", `{"name":"EVIL","subjects":["evil.>"]}`},
		{"delete TURN_MESSAGES", "$JS.API.STREAM.DELETE.TURN_MESSAGES", ""},
		{"purge TURN_SUBMIT", "$JS.API.STREAM.PURGE.TURN_SUBMIT", ""},
		{"delete a message of a session log", "$JS.API.STREAM.MSG.DELETE.TURN_MESSAGES", `{"seq":1}`},
		{"a consumer on the turn requests", "$JS.API.CONSUMER.CREATE.TURN_SUBMIT.thief.turn.submit.>", `{"stream_name":"TURN_SUBMIT","config":{"name":"thief","filter_subject":"turn.submit.>","ack_policy":"explicit"}}`},
		{"a consumer on the events", "$JS.API.CONSUMER.CREATE.TURN_EVENTS", `{"stream_name":"TURN_EVENTS","config":{"ack_policy":"none"}}`},
		{"pull the workers' turn requests", "$JS.API.CONSUMER.MSG.NEXT.TURN_SUBMIT.turn-workers", `{"batch":1,"expires":100000000}`},
	} {
		cases = append(cases, attempt{u, r.what, denied, jsAPI(u, r.subject, r.body)})
	}
	// The fleet's NATS services are the operators'.
	cases = append(cases,
		attempt{u, "PING the services", denied, pingedBy(u)},
		attempt{u, "INFO of the workers' service", denied, jsAPI(u, "$SRV.INFO.turnstream-worker", "")},
		attempt{u, "STATS of the tool workers' service", denied, jsAPI(u, "$SRV.STATS.turnstream-tools", "")},
		attempt{u, "the workers' configuration summary", denied, jsAPI(u, "turn.svc.worker.config", "")},
		attempt{u, "the tool workers' configuration summary", denied, jsAPI(u, "turn.svc.tools.config", "")},
		attempt{u, "subscribe to the services' PING", denied, sub(u, "$SRV.PING")},
		attempt{u, "subscribe to the services' config endpoints", denied, sub(u, "turn.svc.>")},
	)
	// A request's reply subject is the requester's to choose: through the
	// imports, the answer stays in the client's account.
	return append(cases,
		attempt{u, "a session log record through a submit's reply subject", denied, replyTrick(u, "turn.submit.m-reply", "turn.message.m-reply", wire.StreamMessages, nil)},
		attempt{u, "a lease fence marker through a submit's reply subject", denied, replyTrick(u, "turn.submit.m-reply", "turn.message.=fence.m-reply", wire.StreamMessages, nil)},
		attempt{u, "an audit event through a direct get's reply subject", denied, replyTrick(u, "$JS.API.DIRECT.GET.TURN_EVENTS", "turn.event.m-reply", wire.StreamEvents, nil)},
		attempt{u, "a tool result through a stream info's reply subject", denied, replyTrick(u, "$JS.API.STREAM.INFO.TURN_CHUNKS", "turn.result.m-reply", wire.StreamResults, nil)},
		attempt{u, "a turn request through a direct get's reply subject", denied, replyTrick(u, "$JS.API.DIRECT.GET.TURN_MESSAGES.turn.message.m", "turn.submit.m-reply2", wire.StreamSubmit, nil)},
		attempt{u, "purge the submit queue with a rollup header", denied, func(t *testing.T, m *matrix) (bool, string) {
			_, err := m.js[u].PublishMsg(ctxFor(t), &nats.Msg{Subject: "turn.submit.m-rollup", Data: []byte(`{}`),
				Header: nats.Header{jetstream.MsgRollup: {jetstream.MsgRollupAll}}})
			if !m.stored(t, wire.StreamSubmit, "turn.submit.m-client") {
				return true, "the earlier request is gone"
			}
			if err == nil {
				return true, "rollup accepted"
			}
			return false, err.Error()
		}},
	)
}

// toolworkerAttempts: a tool worker takes its tools' calls, claims them
// and answers them; nothing else.
func toolworkerAttempts() []attempt {
	const u = "toolworker"
	cases := []attempt{
		{u, "read its tool's consumer", allowed, jsAPI(u, "$JS.API.CONSUMER.INFO.TURN_TOOLS.tool-get_time", "")},
		{u, "pull, run and answer a call", allowed, func(t *testing.T, m *matrix) (bool, string) {
			ctx := ctxFor(t)
			m.publish(t, "turn.tool.get_time") // the worker dispatches a call
			cons, err := m.js[u].Consumer(ctx, wire.StreamTools, bus.ToolConsumer("get_time"))
			if err != nil {
				return false, err.Error()
			}
			call, err := cons.Next(jetstream.FetchMaxWait(wait))
			if err != nil {
				return false, "pull: " + err.Error()
			}
			if err := call.InProgress(); err != nil {
				return false, "in progress: " + err.Error()
			}
			if _, err := m.js[u].Publish(ctx, "turn.result.m", []byte(`{}`), jetstream.WithMsgID("result:m:t1:c1")); err != nil {
				return false, "result: " + err.Error()
			}
			if err := call.DoubleAck(ctx); err != nil {
				return false, "ack: " + err.Error()
			}
			return true, "answered"
		}},
		{u, "claim a call of its tool", allowed, func(t *testing.T, m *matrix) (bool, string) {
			ctx := ctxFor(t)
			kv, err := m.js[u].KeyValue(ctx, bus.ClaimsBucket)
			if err != nil {
				return false, err.Error()
			}
			rev, err := kv.Create(ctx, "get_time.m.t1.YzE", []byte(`{}`))
			if err != nil {
				return false, "create: " + err.Error()
			}
			if _, err := kv.Update(ctx, "get_time.m.t1.YzE", []byte(`{"v":2}`), rev); err != nil {
				return false, "update: " + err.Error()
			}
			if _, err := kv.Get(ctx, "get_time.m.t1.YzE"); err != nil {
				return false, "get: " + err.Error()
			}
			return true, "claimed"
		}},
		{u, "stream info of the claims bucket", allowed, jsAPI(u, "$JS.API.STREAM.INFO.KV_TURN_CLAIMS", "")},
		{u, "stream info of TURN_RESULTS", denied, jsAPI(u, "$JS.API.STREAM.INFO.TURN_RESULTS", "")},
		{u, "create the claims bucket", denied, jsAPI(u, "$JS.API.STREAM.CREATE.KV_TURN_CLAIMS", `{"name":"KV_TURN_CLAIMS"}`)},

		{u, "pull another tool's calls", denied, jsAPI(u, "$JS.API.CONSUMER.MSG.NEXT.TURN_TOOLS.tool-other", `{"batch":1,"expires":100000000}`)},
		{u, "read another tool's consumer", denied, jsAPI(u, "$JS.API.CONSUMER.INFO.TURN_TOOLS.tool-other", "")},
		{u, "re-point its consumer at another tool", denied, jsAPI(u, "$JS.API.CONSUMER.CREATE.TURN_TOOLS.tool-get_time.turn.tool.other",
			`{"stream_name":"TURN_TOOLS","config":{"durable_name":"tool-get_time","filter_subject":"turn.tool.other","ack_policy":"explicit"}}`)},
		{u, "re-point another tool's consumer at its own", denied, jsAPI(u, "$JS.API.CONSUMER.CREATE.TURN_TOOLS.tool-calculate.turn.tool.get_time",
			`{"stream_name":"TURN_TOOLS","config":{"durable_name":"tool-calculate","filter_subject":"turn.tool.get_time","ack_policy":"explicit"}}`)},
		{u, "create its own consumer", denied, jsAPI(u, "$JS.API.CONSUMER.CREATE.TURN_TOOLS.tool-get_time.turn.tool.get_time",
			`{"stream_name":"TURN_TOOLS","config":{"durable_name":"tool-get_time","filter_subject":"turn.tool.get_time","ack_policy":"none"}}`)},
		{u, "a consumer without a filter", denied, jsAPI(u, "$JS.API.CONSUMER.CREATE.TURN_TOOLS.thief",
			`{"stream_name":"TURN_TOOLS","config":{"durable_name":"thief","ack_policy":"explicit"}}`)},
		{u, "delete its consumer", denied, jsAPI(u, "$JS.API.CONSUMER.DELETE.TURN_TOOLS.tool-get_time", "")},
		{u, "claim another tool's call", denied, pub(u, "$KV.TURN_CLAIMS.other.m.t1.YzE")},
		{u, "read another tool's claims", denied, jsAPI(u, "$JS.API.DIRECT.GET.KV_TURN_CLAIMS.$KV.TURN_CLAIMS.other.m.t1.YzE", "")},
		{u, "read the claims bucket by sequence", denied, jsAPI(u, "$JS.API.DIRECT.GET.KV_TURN_CLAIMS", `{"seq":1}`)},
		{u, "stream info of TURN_STATE", denied, jsAPI(u, "$JS.API.STREAM.INFO.KV_TURN_STATE", "")},
		{u, "direct get of TURN_MESSAGES", denied, jsAPI(u, "$JS.API.DIRECT.GET.TURN_MESSAGES", `{"seq":1}`)},
		{u, "direct get of TURN_RESULTS", denied, jsAPI(u, "$JS.API.DIRECT.GET.TURN_RESULTS", `{"seq":1}`)},
		{u, "direct get of TURN_RAW", denied, jsAPI(u, "$JS.API.DIRECT.GET.TURN_RAW", `{"seq":1}`)},
		{u, "account info", denied, jsAPI(u, "$JS.API.INFO", "")},
		{u, "subscribe to every inbox", denied, sub(u, "_INBOX.>")},
		{u, "subscribe to the client's inbox", denied, sub(u, "_INBOX_client.>")},
		{u, "subscribe to everything", denied, sub(u, ">")},

		// Its NATS service: it answers (see the operator's PING), it does
		// not ask.
		{u, "subscribe to the workers' service", denied, sub(u, "$SRV.INFO.turnstream-worker")},
		{u, "subscribe to the workers' config endpoint", denied, sub(u, "turn.svc.worker.config")},
		{u, "PING the services", denied, pingedBy(u)},
		{u, "the workers' configuration summary", denied, jsAPI(u, "turn.svc.worker.config", "")},
	}
	for _, s := range []string{"turn.tool.>", "turn.result.>", "turn.live.>", "turn.message.>", "turn.raw.>"} {
		cases = append(cases, attempt{u, "subscribe to " + s, denied, sub(u, s)})
	}
	for _, s := range []string{"turn.submit.m", "turn.cancel.m", "turn.message.m", "turn.event.m", "turn.chunk.m.t1", "turn.raw.m.t1",
		"turn.tool.calculate", "turn.live.message.m", "$KV.TURN_STATE.m.=lease", "$JS.ACK.TURN_TOOLS.tool-other.1.1.1.1.0"} {
		cases = append(cases, attempt{u, "publish " + s, denied, pub(u, s)})
	}
	return append(cases,
		attempt{u, "a session log record through a result's reply subject", denied, replyTrick(u, "turn.result.m-reply", "turn.message.m-reply", wire.StreamMessages, nil)},
		attempt{u, "an audit event through a claim's reply subject", denied, replyTrick(u, "$KV.TURN_CLAIMS.get_time.m.t2.YzE", "turn.event.m-reply", wire.StreamEvents, nil)},
		attempt{u, "purge every tool's claims with a rollup header on its own key", denied, func(t *testing.T, m *matrix) (bool, string) {
			_, err := m.js[u].PublishMsg(ctxFor(t), &nats.Msg{Subject: "$KV.TURN_CLAIMS.get_time.m.t3.YzE", Data: []byte(`{}`),
				Header: nats.Header{jetstream.MsgRollup: {jetstream.MsgRollupAll}}})
			if !m.stored(t, "KV_"+bus.ClaimsBucket, "$KV.TURN_CLAIMS.get_time.m.t1.YzE") {
				return true, "the earlier claim is gone"
			}
			if err == nil {
				return true, "rollup accepted"
			}
			return false, err.Error()
		}},
		attempt{u, "purge a session's results with a rollup header", denied, func(t *testing.T, m *matrix) (bool, string) {
			_, err := m.js[u].PublishMsg(ctxFor(t), &nats.Msg{Subject: "turn.result.m", Data: []byte(`{}`),
				Header: nats.Header{jetstream.MsgRollup: {jetstream.MsgRollupSubject}}})
			if err == nil {
				return true, "rollup accepted"
			}
			return false, err.Error()
		}},
	)
}

// auditorAttempts: an auditor reads the events, live and stored; nothing
// else.
func auditorAttempts() []attempt {
	const u = "auditor"
	cases := []attempt{
		{u, "follow events live", allowed, func(t *testing.T, m *matrix) (bool, string) {
			s, err := m.conn(u).SubscribeSync("turn.live.event.>")
			if err != nil {
				return false, err.Error()
			}
			defer s.Unsubscribe()
			if err := m.conn(u).FlushTimeout(wait); err != nil {
				return false, err.Error()
			}
			m.publish(t, "turn.event.m-audit")
			if _, err := s.NextMsg(wait); err != nil {
				return false, err.Error()
			}
			return true, "received"
		}},
		{u, "batch direct get of TURN_EVENTS", allowed, jsAPI(u, "$JS.API.DIRECT.GET.TURN_EVENTS", `{"seq":1,"batch":2}`)},
		{u, "stream info of TURN_EVENTS", allowed, jsAPI(u, "$JS.API.STREAM.INFO.TURN_EVENTS", "")},
		{u, "leader's get of an event", allowed, jsAPI(u, "$JS.API.STREAM.MSG.GET.TURN_EVENTS", `{"last_by_subj":"turn.event.m"}`)},

		{u, "stream info of TURN_MESSAGES", denied, jsAPI(u, "$JS.API.STREAM.INFO.TURN_MESSAGES", "")},
		{u, "direct get of TURN_MESSAGES", denied, jsAPI(u, "$JS.API.DIRECT.GET.TURN_MESSAGES", `{"seq":1}`)},
		{u, "direct get of TURN_CHUNKS", denied, jsAPI(u, "$JS.API.DIRECT.GET.TURN_CHUNKS", `{"seq":1}`)},
		{u, "a consumer on the events", denied, jsAPI(u, "$JS.API.CONSUMER.CREATE.TURN_EVENTS", `{"stream_name":"TURN_EVENTS","config":{"ack_policy":"none"}}`)},
		{u, "account info", denied, jsAPI(u, "$JS.API.INFO", "")},
		{u, "subscribe to every inbox", denied, sub(u, "_INBOX.>")},
		{u, "subscribe to everything", denied, sub(u, ">")},
		{u, "an audit event through a direct get's reply subject", denied, replyTrick(u, "$JS.API.DIRECT.GET.TURN_EVENTS", "turn.event.m-audit-reply", wire.StreamEvents, nil)},
	}
	for _, s := range []string{"turn.live.chunk.>", "turn.live.message.>", "turn.event.>", "turn.message.>", "turn.chunk.>"} {
		cases = append(cases, attempt{u, "subscribe to " + s, denied, sub(u, s)})
	}
	for _, s := range []string{"turn.submit.m", "turn.cancel.m", "turn.message.m", "turn.event.m", "turn.result.m"} {
		cases = append(cases, attempt{u, "publish " + s, denied, pub(u, s)})
	}
	return append(cases,
		attempt{u, "PING the services", denied, pingedBy(u)},
		attempt{u, "the workers' configuration summary", denied, jsAPI(u, "turn.svc.worker.config", "")},
	)
}

// operatorAttempts: operators reach what no other role does.
func operatorAttempts() []attempt {
	const u = "operator"
	return []attempt{
		{u, "read the raw provider frames", allowed, jsAPI(u, "$JS.API.DIRECT.GET.TURN_RAW", `{"seq":1}`)},
		{u, "stream info of TURN_STATE", allowed, jsAPI(u, "$JS.API.STREAM.INFO.KV_TURN_STATE", "")},
		// `nats micro ls`: the workers answer in TURNSTREAM, the tool
		// workers through TOOLS's export.
		{u, "PING the services, answered by the worker and the tool worker", allowed, pingedBy(u, "turnstream-tools", "turnstream-worker")},
		{u, "INFO of the tool workers' service", allowed, jsAPI(u, "$SRV.INFO.turnstream-tools", "")},
		{u, "STATS of the workers' service", allowed, jsAPI(u, "$SRV.STATS.turnstream-worker", "")},
		{u, "the workers' configuration summary", allowed, jsAPI(u, "turn.svc.worker.config", "")},
		{u, "the tool workers' configuration summary", allowed, jsAPI(u, "turn.svc.tools.config", "")},
	}
}

// TestConsumerLimit checks that the account lifts the server's default of
// 1000 consumers per stream for the readers that hold one: a worker reads
// each session log and each turn's tool results with an ordered consumer
// until it stops. Followers hold none (the follow contract).
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
}

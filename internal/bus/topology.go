package bus

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/pkg/wire"
)

// WorkerConsumer is the durable pull consumer all workers share on TURN_SUBMIT.
const WorkerConsumer = "turn-workers"

// ToolConsumer is the durable consumer name of a tool on TURN_TOOLS.
func ToolConsumer(tool string) string { return "tool-" + tool }

// Defaults of the topology's consumers and dedupe window, declared here
// only: the config's defaults (worker.ack_wait, worker.tool_ack_wait) are
// these.
const (
	// DefaultAckWait is the Topology.AckWait default.
	DefaultAckWait = 30 * time.Second
	// DefaultToolAckWait is the Topology.ToolAckWait default.
	DefaultToolAckWait = 5 * time.Second
	// DefaultToolInactiveThreshold is the Topology.ToolInactiveThreshold
	// default.
	DefaultToolInactiveThreshold = time.Hour
	// DefaultDuplicateWindow is the least Topology.DuplicateWindow default.
	DefaultDuplicateWindow = 10 * time.Minute
)

// toolMaxDeliver caps the deliveries of one tool call, as the tool
// consumers always have: the tool workers judge a redelivery by its claim,
// and a call past its deadline is terminated unrun.
const toolMaxDeliver = 10

// Topology describes the streams and the worker consumer. Zero fields take
// the defaults documented on each.
type Topology struct {
	// Subjects names the subjects. Default prefix "turn".
	Subjects wire.Subjects
	// Replicas of every stream. Default 1.
	Replicas int
	// Storage of every stream. Default file.
	Storage jetstream.StorageType
	// ChunkMaxAge bounds how long chunks are kept. Default 1h.
	ChunkMaxAge time.Duration
	// RawMaxAge bounds how long the provider's raw frames are kept.
	// Default ChunkMaxAge (the replay adapter reads both).
	RawMaxAge time.Duration
	// MessageMaxAge bounds the session logs. Default 0: kept forever.
	MessageMaxAge time.Duration
	// EventMaxAge bounds the audit events. Default 30 days.
	EventMaxAge time.Duration
	// ResultMaxAge bounds tool results. Default 7 days.
	ResultMaxAge time.Duration
	// DeadMaxAge bounds dead-lettered requests. Default 7 days.
	DeadMaxAge time.Duration
	// DuplicateWindow is the Nats-Msg-Id dedupe window of submit, message,
	// tool and result streams. Default: long enough for a redelivered tool
	// call to be deduplicated, 2*(ToolTimeout+AckWait), and at least
	// DefaultDuplicateWindow (10 minutes).
	DuplicateWindow time.Duration
	// ToolTimeout is how long a tool call may take (worker.tool_timeout);
	// it only sizes the default DuplicateWindow. Default 0.
	ToolTimeout time.Duration
	// AckWait is how long a worker may hold a turn without a heartbeat
	// before it is redelivered. Default DefaultAckWait (30s). The worker
	// consumer caps no deliveries: a request left at its last delivery
	// would stay in the work queue forever and block its session, so the
	// workers count deliveries durably (the session lease) and fail the
	// turn past worker.max_deliver.
	AckWait time.Duration
	// ToolAckWait is the AckWait of the tool consumers: how long the
	// server waits for word from a tool worker holding a call before it
	// redelivers the call. Tool workers heartbeat every third of it, so a
	// dead tool worker's call is answered within about two of it. Default
	// DefaultToolAckWait (5s).
	ToolAckWait time.Duration
	// ToolInactiveThreshold is how long the server keeps a tool consumer
	// that no tool worker pulls from: a consumer the workers created for
	// a tool nobody serves (a name a model made up) is removed, and made
	// again at the tool's next call; calls stored meanwhile stay in the
	// work queue. Default DefaultToolInactiveThreshold (1h).
	ToolInactiveThreshold time.Duration
	// OpenMaxBytes caps, each on its own, the stores other roles write
	// into: TURN_SUBMIT (clients), TURN_RESULTS and the claims bucket
	// (tool workers) and TURN_DEAD (copies of clients' rejected requests).
	// All streams share the account's storage; without a cap of their own
	// a client or tool worker flooding these could fill it and stop every
	// session-log write. A full submit queue or claims bucket refuses new
	// writes; TURN_RESULTS and TURN_DEAD drop their oldest records.
	// Default DefaultOpenMaxBytes (1 GiB).
	OpenMaxBytes int64
}

// DefaultOpenMaxBytes is the Topology.OpenMaxBytes default.
const DefaultOpenMaxBytes = 1 << 30

func (t Topology) withDefaults() Topology {
	if t.Replicas <= 0 {
		t.Replicas = 1
	}
	if t.ChunkMaxAge <= 0 {
		t.ChunkMaxAge = time.Hour
	}
	if t.RawMaxAge <= 0 {
		t.RawMaxAge = t.ChunkMaxAge
	}
	if t.EventMaxAge <= 0 {
		t.EventMaxAge = 30 * 24 * time.Hour
	}
	if t.ResultMaxAge <= 0 {
		t.ResultMaxAge = 7 * 24 * time.Hour
	}
	if t.OpenMaxBytes <= 0 {
		t.OpenMaxBytes = DefaultOpenMaxBytes
	}
	if t.DeadMaxAge <= 0 {
		t.DeadMaxAge = 7 * 24 * time.Hour
	}
	if t.AckWait <= 0 {
		t.AckWait = DefaultAckWait
	}
	if t.DuplicateWindow <= 0 {
		t.DuplicateWindow = max(DefaultDuplicateWindow, 2*(max(t.ToolTimeout, 0)+t.AckWait))
	}
	if t.ToolAckWait <= 0 {
		t.ToolAckWait = DefaultToolAckWait
	}
	if t.ToolInactiveThreshold <= 0 {
		t.ToolInactiveThreshold = DefaultToolInactiveThreshold
	}
	return t
}

// Streams returns the stream configurations of the topology.
func (t Topology) Streams() []jetstream.StreamConfig {
	t = t.withDefaults()
	s := t.Subjects
	base := func(name, kind, desc string) jetstream.StreamConfig {
		return jetstream.StreamConfig{
			Name:        name,
			Description: desc,
			Subjects:    []string{s.All(kind)},
			Storage:     t.Storage,
			Replicas:    t.Replicas,
			Retention:   jetstream.LimitsPolicy,
			Discard:     jetstream.DiscardOld,
			Duplicates:  t.DuplicateWindow,
			AllowDirect: true,
		}
	}
	// The streams a session lease fences keep one fence marker per session
	// by rolling it up (lease.go); no other stream allows a rollup, so a
	// client that may publish a request or a result cannot purge the
	// stream with a Nats-Rollup header.
	fenced := func(cfg jetstream.StreamConfig) jetstream.StreamConfig {
		cfg.AllowRollup = true
		return cfg
	}
	submit := base(wire.StreamSubmit, "submit", "turn requests (work queue)")
	submit.MaxBytes = t.OpenMaxBytes
	submit.Retention = jetstream.WorkQueuePolicy
	submit.Discard = jetstream.DiscardNew

	// The three followed streams republish every record they store on the
	// live subjects (the follow contract: pkg/client subscribes there and
	// fills gaps with direct gets). The sources match the records' exact
	// shapes, so fence markers (<kind>.=fence.<session>) of messages and
	// events are not republished; a chunk fence marker is, on
	// live.chunk.=fence.<session>, which no follower of a session's turn
	// subscribes to ("=" is never in a token).
	chunks := fenced(base(wire.StreamChunks, "chunk", "normalized provider chunks and attempt markers"))
	chunks.MaxAge = t.ChunkMaxAge
	chunks.Duplicates = time.Second // chunks carry no message ids
	chunks.RePublish = &jetstream.RePublish{
		Source:      s.Chunk("*", "*"),
		Destination: s.LiveChunk("{{wildcard(1)}}", "{{wildcard(2)}}"),
	}

	// The provider's bytes, for workers and operators only: not
	// republished (nobody follows them live).
	raw := fenced(base(wire.StreamRaw, "raw", "raw provider frames (workers and operators only)"))
	raw.MaxAge = t.RawMaxAge
	raw.Duplicates = time.Second // frames carry no message ids

	messages := fenced(base(wire.StreamMessages, "message", "session logs of finalized messages"))
	messages.MaxAge = t.MessageMaxAge
	messages.RePublish = &jetstream.RePublish{Source: s.Message("*"), Destination: s.LiveMessage("{{wildcard(1)}}")}

	events := fenced(base(wire.StreamEvents, "event", "audit session events"))
	events.MaxAge = t.EventMaxAge
	events.RePublish = &jetstream.RePublish{Source: s.Event("*"), Destination: s.LiveEvent("{{wildcard(1)}}")}

	tools := base(wire.StreamTools, "tool", "tool calls (work queue)")
	tools.Retention = jetstream.WorkQueuePolicy
	tools.Discard = jetstream.DiscardNew

	results := base(wire.StreamResults, "result", "tool results")
	results.MaxAge = t.ResultMaxAge
	results.MaxBytes = t.OpenMaxBytes

	dead := base(wire.StreamDead, "dead", "rejected turn requests")
	dead.MaxAge = t.DeadMaxAge
	dead.MaxBytes = t.OpenMaxBytes
	dead.Duplicates = time.Second

	return []jetstream.StreamConfig{submit, chunks, raw, messages, events, tools, results, dead}
}

// WorkerConsumerConfig is the durable pull consumer workers share. It caps
// no deliveries (MaxDeliver -1; see Topology.AckWait).
func (t Topology) WorkerConsumerConfig() jetstream.ConsumerConfig {
	t = t.withDefaults()
	return jetstream.ConsumerConfig{
		Durable:       WorkerConsumer,
		Description:   "turnstream workers",
		FilterSubject: t.Subjects.All("submit"),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       t.AckWait,
		MaxDeliver:    -1,
		MaxAckPending: 10000,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}
}

// Ensure creates or updates every stream and the worker consumer. It is
// idempotent and safe to run from many workers at once.
func (t Topology) Ensure(ctx context.Context, js jetstream.JetStream) error {
	// Each request has its own bound: a clustered server may leave
	// unanswered a create that raced another worker's create of the same
	// stream (the stream is made all the same), and the next attempt of
	// EnsureRetry then finds it.
	call := func(what string, fn func(ctx context.Context) error) error {
		cctx, cancel := context.WithTimeout(ctx, ensureCallTimeout)
		defer cancel()
		if err := fn(cctx); err != nil {
			return fmt.Errorf("bus: %s: %w", what, err)
		}
		return nil
	}
	for _, cfg := range t.Streams() {
		if err := call("stream "+cfg.Name, func(ctx context.Context) error {
			return ensureStream(ctx, js, cfg)
		}); err != nil {
			return err
		}
	}
	if err := call("consumer "+WorkerConsumer, func(ctx context.Context) error {
		_, err := js.CreateOrUpdateConsumer(ctx, wire.StreamSubmit, t.WorkerConsumerConfig())
		return err
	}); err != nil {
		return err
	}
	for _, kv := range []jetstream.KeyValueConfig{t.StateConfig(), t.ClaimsConfig()} {
		if err := call("bucket "+kv.Bucket, func(ctx context.Context) error {
			if _, err := EnsureBucket(ctx, js, kv); err != nil || kv.Bucket != ClaimsBucket {
				return err
			}
			return noRollups(ctx, js, "KV_"+kv.Bucket)
		}); err != nil {
			return err
		}
	}
	return nil
}

// noRollups turns rollups off on a bucket's stream: the claims bucket,
// which tool workers write. nats.go creates (and updates) every bucket
// allowing them, for KeyValue.Purge, which tool workers never use; and a
// subject permission cannot tell a rollup header from a plain write, so a
// tool worker allowed to claim under one tool's keys could otherwise purge
// the whole claims bucket with one "Nats-Rollup: all" publish. TURN_STATE,
// which only workers and operators write, keeps them (an operator may
// purge a key).
func noRollups(ctx context.Context, js jetstream.JetStream, stream string) error {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return err
	}
	cfg := s.CachedInfo().Config
	if !cfg.AllowRollup {
		return nil
	}
	cfg.AllowRollup = false
	_, err = js.UpdateStream(ctx, cfg)
	return err
}

// ensureStream creates the stream, or updates it unless it is already
// configured so: every worker ensures the topology when it starts, and a
// needless update is not free (the server rewrites the stream's store
// configuration, and nats-server 2.15 does so racing consumers being
// created on it).
func ensureStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) error {
	s, err := js.Stream(ctx, cfg.Name)
	if err == nil && sameStream(s.CachedInfo().Config, cfg) {
		return nil
	}
	if err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return err
	}
	_, err = js.CreateOrUpdateStream(ctx, cfg)
	return err
}

// EnsureBucket opens a key-value bucket, creating it, or updating it
// unless it is already configured so (see ensureStream).
func EnsureBucket(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	if err == nil {
		st, serr := kv.Status(ctx)
		if serr == nil && st.History() == int64(max(cfg.History, 1)) && st.TTL() == cfg.TTL &&
			st.Config().Replicas == max(cfg.Replicas, 1) && st.Config().Storage == cfg.Storage && st.Config().Description == cfg.Description &&
			st.Config().MaxBytes == unlimited(cfg.MaxBytes) {
			return kv, nil
		}
	} else if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, err
	}
	return js.CreateOrUpdateKeyValue(ctx, cfg)
}

// sameStream reports whether have already is what want asks for, in the
// fields the topology sets.
func sameStream(have, want jetstream.StreamConfig) bool {
	return have.Description == want.Description && slices.Equal(have.Subjects, want.Subjects) &&
		have.Storage == want.Storage && have.Replicas == max(want.Replicas, 1) &&
		have.Retention == want.Retention && have.Discard == want.Discard &&
		have.MaxAge == want.MaxAge && have.Duplicates == want.Duplicates && have.MaxBytes == unlimited(want.MaxBytes) &&
		have.AllowDirect == want.AllowDirect && have.AllowRollup == want.AllowRollup &&
		reflect.DeepEqual(have.RePublish, want.RePublish)
}

// ensureCallTimeout bounds one request of Ensure.
const ensureCallTimeout = 3 * time.Second

// StateConfig is the worker-only state bucket: one value per key, kept as
// long as the session logs it serves.
func (t Topology) StateConfig() jetstream.KeyValueConfig {
	t = t.withDefaults()
	return jetstream.KeyValueConfig{
		Bucket:      StateBucket,
		Description: "worker-only provider state (never published to clients)",
		History:     1,
		TTL:         t.MessageMaxAge,
		Storage:     t.Storage,
		Replicas:    t.Replicas,
	}
}

// ToolConsumerConfig is the durable pull consumer of one tool on
// TURN_TOOLS: "tool-<tool>", filtered on the tool's subject, with the
// topology's ToolAckWait and ToolInactiveThreshold.
func (t Topology) ToolConsumerConfig(tool string) jetstream.ConsumerConfig {
	t = t.withDefaults()
	return jetstream.ConsumerConfig{
		Durable:           ToolConsumer(tool),
		Description:       "tool workers of " + tool,
		FilterSubject:     t.Subjects.Tool(tool),
		AckPolicy:         jetstream.AckExplicitPolicy,
		AckWait:           t.ToolAckWait,
		MaxDeliver:        toolMaxDeliver,
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		InactiveThreshold: t.ToolInactiveThreshold,
	}
}

// EnsureToolConsumer creates or updates the durable consumer of one tool
// (ToolConsumerConfig). Workers do, before they dispatch the tool's first
// call (TurnWriter.Dispatch); tool workers never create or change
// consumers, they bind to the one the workers made.
func (t Topology) EnsureToolConsumer(ctx context.Context, js jetstream.JetStream, tool string) (jetstream.Consumer, error) {
	c, err := js.CreateOrUpdateConsumer(ctx, wire.StreamTools, t.ToolConsumerConfig(tool))
	if err != nil {
		return nil, fmt.Errorf("bus: tool consumer %s: %w", tool, err)
	}
	return c, nil
}

// unlimited is a size limit as the server reports it: -1 for none (0).
func unlimited(n int64) int64 {
	if n == 0 {
		return -1
	}
	return n
}
